package report

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// OpenDocuments reads the documents written by WriteJSON at paths (a
// file, or a pipe as <(...) gives: see openDocument), one value at a time (a day's document,
// hundreds of MB, in a few MB of memory), and names each by its file name.
// The documents' intervals stay in their files, read from there when
// visited: close closes them (and removes what the documents made,
// merge's spools). A file that cannot be opened or read, that is not a
// txload document, or that is given twice (by any path) is an
// *InputError naming it.
func OpenDocuments(ctx context.Context, paths []string) (docs []*Document, names []string, close func(), err error) {
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
		f, size, err := openDocument(ctx, path)
		if ctx.Err() != nil {
			return nil, nil, nil, context.Cause(ctx)
		}
		if err != nil {
			return nil, nil, nil, &InputError{Err: fmt.Errorf("%s: %w", path, err)}
		}
		files = append(files, f)
		h := sha256.New()
		doc, err := ReadJSONAt(f, size, h)
		if err != nil {
			return nil, nil, nil, &InputError{Err: fmt.Errorf("%s: %w", path, err)}
		}
		quoteText(doc)
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

// MaxPipedDocument bounds what is read of a document that is not a
// regular file (a pipe, a FIFO, /dev/zero): it is copied to $TMPDIR to be
// read at any offset, and a source that does not end must not fill it.
// A larger document is read from a regular file, where it is not copied.
const MaxPipedDocument = 1 << 30

// openDocument opens a document to read it at any offset: a regular file
// as it is; anything else (a pipe, as <(...) gives) copied first to a file
// of its own in $TMPDIR, removed as it is made, at most MaxPipedDocument
// bytes of it, and refused at its first byte if that cannot begin a
// document. ctx ends the wait for a FIFO's writer and the copy.
func openDocument(ctx context.Context, path string) (*os.File, int64, error) {
	f, err := OpenInput(ctx, path)
	if err != nil {
		return nil, 0, err
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
	n, err := copyDocument(ctx, tmp, f, MaxPipedDocument)
	if err != nil {
		tmp.Close()
		return nil, 0, err
	}
	return tmp, n, nil
}

// OpenInput opens path for reading, as the commands that read files
// given to them do: the open of a FIFO, which waits for a writer, waits
// only as long as ctx (it goes on in the background, and a file it opens
// too late is closed). Errors are the open's, without the path.
func OpenInput(ctx context.Context, path string) (*os.File, error) {
	type opened struct {
		f   *os.File
		err error
	}
	c := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		c <- opened{f, err}
	}()
	select {
	case o := <-c:
		if o.err != nil {
			return nil, errors.Unwrap(o.err)
		}
		return o.f, nil
	case <-ctx.Done():
		go func() {
			if o := <-c; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, context.Cause(ctx)
	}
}

// copyDocument copies src, a pipe or a device, to dst: at most limit
// bytes, its first byte other than white space '{' (as a document's), the
// copy ended by ctx (a read waiting on a pipe included).
func copyDocument(ctx context.Context, dst io.Writer, src *os.File, limit int64) (int64, error) {
	stop := context.AfterFunc(ctx, func() { _ = src.SetReadDeadline(time.Now()) })
	defer stop()
	buf := make([]byte, 256<<10)
	var n int64
	begun := false
	for {
		if err := ctx.Err(); err != nil {
			return n, context.Cause(ctx)
		}
		k, err := src.Read(buf)
		if !begun && k > 0 {
			i := bytes.IndexFunc(buf[:k], func(r rune) bool { return !strings.ContainsRune(" \t\r\n", r) })
			if i >= 0 {
				if buf[i] != '{' {
					return n, fmt.Errorf("reading a txload JSON document: offset %d: invalid character %q, want '{'", n+int64(i), rune(buf[i]))
				}
				begun = true
			}
		}
		if n+int64(k) > limit {
			return n, fmt.Errorf("more than %d MiB from a pipe or a device (the most txload copies to read): write it to a file and give its path", limit>>20)
		}
		if _, werr := dst.Write(buf[:k]); werr != nil {
			return n, werr
		}
		n += int64(k)
		switch {
		case err == io.EOF:
			return n, nil
		case ctx.Err() != nil:
			return n, context.Cause(ctx)
		case err != nil:
			return n, err
		}
	}
}
