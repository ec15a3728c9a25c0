package embedded

import (
	"archive/tar"
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// manifestFile, in a runtime dir, lists what extraction wrote: each file's
// size, mode, modification time and SHA-256, each symlink's target. A
// start checks the sizes, modes and links of every entry (a stat each) and
// hashes a file only when its modification time changed; after a failed
// start, everything is hashed.
const manifestFile = ".txload-manifest.json"

type manifest struct {
	Files []manifestEntry `json:"files"`
}

type manifestEntry struct {
	Path   string      `json:"path"` // slash-separated, relative to the runtime dir
	Link   string      `json:"link,omitempty"`
	Size   int64       `json:"size,omitempty"`
	Mode   fs.FileMode `json:"mode,omitempty"`
	MTime  int64       `json:"mtime,omitempty"` // ns since the epoch; 0: unknown, always hash
	SHA256 string      `json:"sha256,omitempty"`
}

// errNoManifest: the runtime dir was extracted by a txload that wrote none.
var errNoManifest = errors.New("no manifest")

func readManifest(dir string) (*manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, manifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoManifest
	}
	if err != nil {
		return nil, err
	}
	m := &manifest{}
	if err := json.Unmarshal(b, m); err != nil || len(m.Files) == 0 {
		return nil, fmt.Errorf("unreadable %s", manifestFile)
	}
	return m, nil
}

// write stores m in dir, with the modification times the files have now.
func (m *manifest) write(dir string) error {
	for i := range m.Files {
		e := &m.Files[i]
		if e.Link != "" {
			continue
		}
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(e.Path)))
		if err != nil {
			return err
		}
		e.MTime = fi.ModTime().UnixNano()
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, manifestFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o644); err != nil { // readable whatever the umask
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, manifestFile))
}

// check compares dir with m and says what is wrong, or "" if nothing is:
// a missing file, another size, mode or link target, or, where the
// modification time changed (always, with full), other contents.
func (m *manifest) check(dir string, full bool) string {
	for _, e := range m.Files {
		p := filepath.Join(dir, filepath.FromSlash(e.Path))
		fi, err := os.Lstat(p)
		if err != nil {
			return fmt.Sprintf("%s is missing", e.Path)
		}
		if e.Link != "" {
			if t, err := os.Readlink(p); err != nil || t != e.Link {
				return fmt.Sprintf("%s is not a link to %s", e.Path, e.Link)
			}
			continue
		}
		switch {
		case !fi.Mode().IsRegular():
			return fmt.Sprintf("%s is not a regular file", e.Path)
		case fi.Size() != e.Size:
			return fmt.Sprintf("%s has %d bytes, want %d", e.Path, fi.Size(), e.Size)
		case fi.Mode().Perm() != e.Mode.Perm():
			return fmt.Sprintf("%s has mode %v, want %v", e.Path, fi.Mode().Perm(), e.Mode.Perm())
		}
		if !full && e.MTime != 0 && fi.ModTime().UnixNano() == e.MTime {
			continue
		}
		sum, err := hashFile(p)
		if err != nil {
			return fmt.Sprintf("%s cannot be read: %v", e.Path, err)
		}
		if sum != e.SHA256 {
			return fmt.Sprintf("%s has other contents than were extracted (SHA-256 %.12s…, want %.12s…)", e.Path, sum, e.SHA256)
		}
	}
	return ""
}

func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, bufio.NewReaderSize(f, 1<<20)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// recorder builds a manifest while untar writes the files.
type recorder struct{ m manifest }

func (r *recorder) file(name string, size int64, mode fs.FileMode, sum []byte) {
	r.m.Files = append(r.m.Files, manifestEntry{Path: filepath.ToSlash(name), Size: size, Mode: mode.Perm(), SHA256: hex.EncodeToString(sum)})
}

func (r *recorder) link(name, target string) {
	r.m.Files = append(r.m.Files, manifestEntry{Path: filepath.ToSlash(name), Link: target})
}

// done sorts the entries and returns the manifest.
func (r *recorder) done() *manifest {
	sort.Slice(r.m.Files, func(i, j int) bool { return r.m.Files[i].Path < r.m.Files[j].Path })
	return &r.m
}

// manifestOfArchive reads the manifest an extraction of tr would write,
// without writing anything: to check a runtime dir extracted before
// manifests existed.
func manifestOfArchive(tr *tar.Reader) (*manifest, error) {
	var r recorder
	hardLinks := map[string]string{}
	sums := map[string]manifestEntry{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		name := filepath.Clean(filepath.FromSlash(h.Name))
		if name == "." || !filepath.IsLocal(name) {
			continue
		}
		switch h.Typeflag {
		case tar.TypeReg:
			hash := sha256.New()
			n, err := io.Copy(hash, tr)
			if err != nil {
				return nil, err
			}
			r.file(name, n, extractedMode(h), hash.Sum(nil))
			sums[name] = r.m.Files[len(r.m.Files)-1]
		case tar.TypeSymlink:
			r.link(name, h.Linkname)
		case tar.TypeLink:
			hardLinks[name] = filepath.Clean(filepath.FromSlash(h.Linkname))
		}
	}
	for name, target := range hardLinks {
		e, ok := sums[target]
		if !ok {
			return nil, fmt.Errorf("hard link %s to %s, which is not a file", name, target)
		}
		e.Path = filepath.ToSlash(name)
		r.m.Files = append(r.m.Files, e)
	}
	return r.done(), nil
}

// extractedMode is the mode untar gives a regular file: readable by all,
// executable by all if by anyone.
func extractedMode(h *tar.Header) fs.FileMode {
	mode := h.FileInfo().Mode().Perm()
	if mode&0o111 != 0 {
		mode |= 0o111
	}
	return mode | 0o444
}
