package report

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// OpenDocuments reads the documents written by WriteJSON at paths (a
// file, or a pipe as <(...) gives), one value at a time (a day's document,
// hundreds of MB, in a few MB of memory), and names each by its file name.
// The documents' intervals stay in their files, read from there when
// visited: close closes them (and removes what the documents made,
// merge's spools). A file that cannot be opened or read, that is not a
// txload document, or that is given twice (by any path) is an
// *InputError naming it.
func OpenDocuments(paths []string) (docs []*Document, names []string, close func(), err error) {
	var files []*os.File
	docs, names = make([]*Document, 0, len(paths)), make([]string, len(paths))
	closeAll := func() {
		for _, d := range docs {
			d.Close()
		}
		for _, f := range files {
			f.Close()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	seen := map[[sha256.Size]byte]string{}
	for i, path := range paths {
		f, size, err := openDocument(path)
		if err != nil {
			return nil, nil, nil, &InputError{Err: fmt.Errorf("%s: %w", path, err)}
		}
		files = append(files, f)
		h := sha256.New()
		doc, err := ReadJSONAt(f, size, h)
		if err != nil {
			return nil, nil, nil, &InputError{Err: fmt.Errorf("%s: %w", path, err)}
		}
		docs = append(docs, doc)
		// The same document twice (by any path): older documents have no
		// run id for merge to tell.
		var sum [sha256.Size]byte
		h.Sum(sum[:0])
		if prev, ok := seen[sum]; ok {
			return nil, nil, nil, inputErrorf("%s and %s are the same document: give each run once", prev, path)
		}
		seen[sum] = path
		names[i] = filepath.Base(path)
	}
	return docs, names, closeAll, nil
}

// openDocument opens a document to read it at any offset: a regular file
// as it is; anything else (a pipe, as <(...) gives) copied first to a file
// of its own in $TMPDIR, removed as it is made.
func openDocument(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, errors.Unwrap(err)
	}
	st, err := f.Stat()
	switch {
	case err != nil:
		f.Close()
		return nil, 0, errors.Unwrap(err)
	case st.IsDir():
		f.Close()
		return nil, 0, errors.New("is a directory")
	case st.Mode().IsRegular():
		return f, st.Size(), nil
	}
	defer f.Close()
	tmp, err := os.CreateTemp("", "txload-document-*.json")
	if err != nil {
		return nil, 0, fmt.Errorf("copying it to read it again (set TMPDIR to a writable directory): %w", err)
	}
	os.Remove(tmp.Name())
	n, err := io.Copy(tmp, f)
	if err != nil {
		tmp.Close()
		return nil, 0, err
	}
	return tmp, n, nil
}
