// Package outfile writes txload's output files (--json, --html, --csv,
// --chart, --histogram, report -o, merge -o): atomically where the path is
// a regular file or absent, so that a reader never sees one half-written;
// through anything else (a character device such as /dev/stdout, a FIFO, a
// process substitution's pipe), and through a symlink to its target, as
// other tools do. A path that is not a regular file is never replaced.
// Every file it creates has one mode: 0644 less the umask.
package outfile

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// mode is the mode of the files written, before the umask.
const mode = 0o644

// target is where a path is written: the path itself, or the file a
// symlink (chain) leads to; atomic says a regular file is, or will be,
// there and is written through a rename; info is what is there now (nil:
// nothing).
type target struct {
	path   string
	atomic bool
	info   fs.FileInfo
}

// resolve follows path's symlinks to what a write would reach.
func resolve(path string) (target, error) {
	for range 40 {
		st, err := os.Stat(path) // through every link, as open would go
		switch {
		case err == nil && st.IsDir():
			return target{}, errors.New("is a directory")
		case err == nil && !st.Mode().IsRegular():
			return target{path: path, info: st}, nil
		case err == nil:
			real, err := filepath.EvalSymlinks(path)
			if err != nil {
				// A link the kernel follows but that names no path
				// (/proc/self/fd/N of a deleted file): written in place.
				return target{path: path, info: st}, nil
			}
			return target{path: real, atomic: true, info: st}, nil
		case !errors.Is(err, fs.ErrNotExist):
			return target{}, err
		}
		li, err := os.Lstat(path)
		if err != nil || li.Mode()&fs.ModeSymlink == 0 {
			return target{path: path, atomic: true}, nil
		}
		// A dangling link: the file it names is created.
		dest, err := os.Readlink(path)
		if err != nil {
			return target{}, err
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(path), dest)
		}
		path = dest
	}
	return target{}, errors.New("too many levels of symbolic links")
}

// Check makes sure path can be written as Write and Create will write it,
// before a run starts, so that minutes of load are not lost to a typo, a
// directory or a read-only file system: a regular file's directory takes a
// new file (and an existing file opens for writing); anything else opens
// for writing. A FIFO is not opened (that would wait for its reader).
func Check(path string) error {
	if f, ok, err := openFD(path); ok {
		if err != nil {
			return unwrap(err)
		}
		return f.Close()
	}
	t, err := resolve(path)
	if err != nil {
		return unwrap(err)
	}
	if !t.atomic {
		if t.info.Mode()&fs.ModeNamedPipe != 0 {
			return nil
		}
		f, err := os.OpenFile(t.path, os.O_WRONLY, 0)
		if err != nil {
			return unwrap(err)
		}
		return f.Close()
	}
	if t.info != nil {
		f, err := os.OpenFile(t.path, os.O_WRONLY, 0)
		if err != nil {
			return unwrap(err)
		}
		f.Close()
	}
	dir := filepath.Dir(t.path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("directory %s does not exist", dir)
	}
	f, name, err := createTemp(t.path)
	if err != nil {
		return fmt.Errorf("cannot create a file in %s: %v", dir, unwrap(err))
	}
	f.Close()
	return os.Remove(name)
}

// Write writes path with write: through a temporary file renamed over it
// where path is (or will be) a regular file, else straight to what is
// there (a descriptor of the process's own, as /dev/stdout, is written
// where it points, at its offset). A failed write leaves a regular file as
// it was. A write to what is not a regular file that its reader does not
// take returns when ctx ends (Watched.StopOn).
func Write(ctx context.Context, path string, write func(io.Writer) error) error {
	f, ok, err := openFD(path)
	if !ok {
		var t target
		if t, err = resolve(path); err != nil {
			return err
		}
		if t.atomic {
			return writeAtomic(t.path, write)
		}
		f, err = openInPlace(t)
	}
	if err != nil {
		return err
	}
	if err := writeAll(ctx, f, write); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeAll is write(w), or the first write to w that failed where write
// did not say so (a report printed with fmt.Fprintf).
func writeAll(ctx context.Context, w io.Writer, write func(io.Writer) error) error {
	ww := Watch(w).StopOn(ctx)
	if err := write(ww); err != nil {
		return err
	}
	return ww.Err()
}

// writeAtomic writes path through a temporary file renamed over it.
func writeAtomic(path string, write func(io.Writer) error) error {
	f, tmp, err := createTemp(path)
	if err != nil {
		return err
	}
	if err := writeAll(context.Background(), f, write); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// Create opens path for a file written as the run goes (the .hlog): a
// regular file is created or truncated in place (through a symlink, its
// target), anything else opened for writing.
func Create(path string) (*os.File, error) {
	if f, ok, err := openFD(path); ok {
		return f, err
	}
	t, err := resolve(path)
	if err != nil {
		return nil, err
	}
	if !t.atomic {
		return openInPlace(t)
	}
	return os.OpenFile(t.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
}

// openInPlace opens what is at t for writing, a regular file truncated.
func openInPlace(t target) (*os.File, error) {
	if t.info != nil && t.info.Mode()&fs.ModeNamedPipe != 0 {
		return openFIFO(t.path)
	}
	flag := os.O_WRONLY
	if t.info != nil && t.info.Mode().IsRegular() {
		flag |= os.O_TRUNC
	}
	return os.OpenFile(t.path, flag, 0)
}

// createTemp creates a new file beside path, with the output mode.
func createTemp(path string) (*os.File, string, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	for range 100 {
		var b [6]byte
		_, _ = rand.Read(b[:])
		name := filepath.Join(dir, "."+base+".tmp-"+hex.EncodeToString(b[:]))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
	return nil, "", fmt.Errorf("creating a temporary file in %s: too many exist", dir)
}

// unwrap drops the operation and path of a *PathError: the caller names
// the flag and the path.
func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// File is a file a command reads or writes, by the flag or argument that
// names it.
type File struct {
	Flag, Path string
}

// Conflicts refuses an output that is also an input, or that two outputs
// share (the same path, or two paths to one file: a symlink, a hard link,
// /dev/stdout and /dev/fd/1): one would overwrite the other. Its error
// names both.
func Conflicts(outputs, inputs []File) error {
	type seen struct {
		f  File
		id identity
	}
	var outs []seen
	for _, o := range outputs {
		if o.Path == "" || o.Path == os.DevNull {
			continue
		}
		id := identify(o.Path)
		for _, in := range inputs {
			if in.Path != "" && id.same(identify(in.Path)) {
				return fmt.Errorf("%s %s is also %s: writing it would overwrite what txload reads; give another path", o.Flag, o.Path, describe(in))
			}
		}
		for _, prev := range outs {
			if id.same(prev.id) {
				return fmt.Errorf("%s %s and %s %s are the same file: one would overwrite the other; give each output its own path", prev.f.Flag, prev.f.Path, o.Flag, o.Path)
			}
		}
		outs = append(outs, seen{o, id})
	}
	return nil
}

func describe(f File) string {
	if f.Flag == "" {
		return "an input"
	}
	return "its " + f.Flag
}

// identity is what a path leads to: the file, where it exists, else the
// absolute path it would be created at.
type identity struct {
	info fs.FileInfo
	path string
}

func identify(path string) identity {
	if st, err := os.Stat(path); err == nil {
		return identity{info: st}
	}
	if t, err := resolve(path); err == nil {
		path = t.path
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(dir, filepath.Base(abs))
	}
	return identity{path: abs}
}

func (a identity) same(b identity) bool {
	if a.info != nil && b.info != nil {
		return os.SameFile(a.info, b.info)
	}
	return a.info == nil && b.info == nil && a.path == b.path
}
