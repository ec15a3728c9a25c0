package embedded

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// initdbArgs are initdb's flags after -D, valid from PostgreSQL 12 through
// 18.
var initdbArgs = []string{"-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"}

// templateDir is where the cluster that initdb made with the binaries in
// rt is kept, untouched by any server, for the next starts to copy: what
// initdb writes depends only on the binaries and its flags, and copying
// 40 MB takes a tenth of initdb's second. The flags are in the name, so a
// change to them never reuses a cluster made with others.
func templateDir(rt string) string {
	h := sha256.Sum256([]byte(strings.Join(initdbArgs, "\x00")))
	return fmt.Sprintf("%s.initdb-%x", rt, h[:4])
}

// fromTemplate copies the kept cluster tpl to data, owned by as where set.
// It reports false, leaving nothing at data, when there is no kept cluster
// or it cannot be copied (another user's, say): the caller runs initdb.
func fromTemplate(tpl, data string, as *account) bool {
	if _, err := os.Stat(tpl); err != nil {
		return false
	}
	if err := copyTree(tpl, data, as); err != nil {
		_ = os.RemoveAll(data)
		return false
	}
	return true
}

// keepTemplate copies the cluster initdb just made at data to tpl, for
// the next starts, unless one is there already; kept reports whether this
// call put it there. The copy is made beside tpl and renamed into place: a
// cluster at tpl is always whole. Copies left by a process that died while
// making one are removed.
func keepTemplate(data, tpl string) (kept bool, err error) {
	parent, base := filepath.Dir(tpl), "."+filepath.Base(tpl)+".tmp-"
	old, _ := filepath.Glob(filepath.Join(parent, base+"*"))
	for _, o := range old {
		if fi, err := os.Stat(o); err == nil && time.Since(fi.ModTime()) > time.Hour {
			_ = os.RemoveAll(o)
		}
	}
	if _, err := os.Stat(tpl); err == nil {
		return false, nil
	}
	tmp, err := os.MkdirTemp(parent, base)
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp)
	staged := filepath.Join(tmp, "data")
	if err := copyTree(data, staged, nil); err != nil {
		return false, err
	}
	if err := os.Rename(staged, tpl); err != nil {
		if _, serr := os.Stat(tpl); serr == nil {
			return false, nil // another process kept its copy first
		}
		return false, err
	}
	return true, nil
}

// copyTree copies the directory src to dst, which must not exist:
// directories, regular files and symbolic links, with their permissions,
// owned by as where set.
func copyTree(src, dst string, as *account) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			err = os.Mkdir(out, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			var target string
			if target, err = os.Readlink(p); err == nil {
				err = os.Symlink(target, out)
			}
		case d.Type().IsRegular():
			err = copyFile(p, out, info.Mode().Perm())
		default:
			err = errors.New("neither a file, a directory nor a link")
		}
		if err == nil && as != nil {
			err = os.Lchown(out, int(as.uid), int(as.gid))
		}
		if err != nil {
			return fmt.Errorf("copying %s: %w", p, err)
		}
		return nil
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
