package embedded

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/ulikunitz/xz"
)

const (
	mavenBase       = "https://repo1.maven.org/maven2/io/zonky/test/postgres"
	downloadTimeout = 5 * time.Minute
)

// defaultCacheDir is where binaries live unless Options.CacheDir says otherwise.
// Root gets a world-readable system dir because the server runs as nobody,
// who cannot enter /root.
func defaultCacheDir() (string, error) {
	if d := os.Getenv("TXLOAD_CACHE_DIR"); d != "" {
		return d, nil
	}
	if os.Geteuid() == 0 {
		return "/var/cache/txload/postgres", nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding user cache dir: %w", err)
	}
	return filepath.Join(d, "txload", "postgres"), nil
}

// platform names the zonky artifact for this OS and architecture.
func platform() (string, error) {
	switch runtime.GOOS + "/" + runtime.GOARCH {
	case "linux/amd64":
		return "linux-amd64", nil
	case "linux/arm64":
		return "linux-arm64v8", nil
	case "darwin/amd64":
		return "darwin-amd64", nil
	case "darwin/arm64":
		return "darwin-arm64v8", nil
	}
	return "", fmt.Errorf("no PostgreSQL binaries for %s/%s: supported are linux/amd64, linux/arm64, darwin/amd64 and darwin/arm64",
		runtime.GOOS, runtime.GOARCH)
}

func jarURL(plat string, v Version) string {
	name := "embedded-postgres-binaries-" + plat
	return fmt.Sprintf("%s/%s/%s/%s-%s.jar", mavenBase, name, v.Full, name, v.Full)
}

// ensureRuntime returns the directory holding bin/, lib/ and share/ for v,
// downloading and extracting it into cacheDir on first use. A lock file
// serialises fetching between processes; readers of a finished tree need no lock
// because it appears by rename.
func ensureRuntime(ctx context.Context, cacheDir string, v Version, log io.Writer, public bool) (string, error) {
	plat, err := platform()
	if err != nil {
		return "", err
	}
	key := v.Full + "-" + runtime.GOOS + "-" + runtime.GOARCH
	dir := filepath.Join(cacheDir, key)
	if complete(dir) {
		return dir, nil
	}
	if err := mkdirAll(cacheDir, public); err != nil {
		return "", fmt.Errorf("creating cache dir: %w", err)
	}
	unlock, err := lock(ctx, filepath.Join(cacheDir, key+".lock"), log)
	if err != nil {
		return "", err
	}
	defer unlock()
	if complete(dir) { // another process fetched it while we waited
		return dir, nil
	}
	jar := filepath.Join(cacheDir, key+".jar")
	if _, err := os.Stat(jar); err != nil {
		fmt.Fprintf(log, "fetching PostgreSQL %s from Maven Central (first run only)\n", v.Full)
		if err := download(ctx, jarURL(plat, v), jar); err != nil {
			return "", err
		}
	}
	fmt.Fprintf(log, "extracting PostgreSQL %s into %s\n", v.Full, dir)
	if err := os.RemoveAll(dir); err != nil { // an incomplete leftover
		return "", fmt.Errorf("removing stale %s: %w", dir, err)
	}
	if err := extractJar(jar, dir); err != nil {
		os.Remove(jar) // possibly corrupt; fetch afresh next time
		return "", fmt.Errorf("extracting %s: %w", jar, err)
	}
	os.Remove(jar)
	return dir, nil
}

func complete(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "bin", "postgres"))
	return err == nil && fi.Mode().IsRegular()
}

// mkdirAll is os.MkdirAll that, when public, makes the dirs it creates 0755
// whatever the umask.
func mkdirAll(dir string, public bool) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirAll(parent, public); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
	}
	if public {
		return os.Chmod(dir, 0o755)
	}
	return nil
}

// lock takes an exclusive flock on path, polling so that ctx is honoured.
func lock(ctx context.Context, path string, log io.Writer) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	for waited := false; ; waited = true {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		if ok {
			return func() { f.Close() }, nil // closing releases the flock
		}
		if !waited {
			fmt.Fprintf(log, "waiting for another process to finish fetching PostgreSQL (%s)\n", path)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for lock %s: %w", path, context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// download fetches url into dst via a temp file in the same dir and a rename.
func download(ctx context.Context, url, dst string) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("downloading %s: %w", url, err)
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: downloadTimeout}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("not published for %s/%s (%s)", runtime.GOOS, runtime.GOARCH, resp.Status)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("unexpected status %s", resp.Status)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".download-*.jar")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	n, err := io.Copy(tmp, resp.Body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return fmt.Errorf("got %d of %d bytes", n, resp.ContentLength)
	}
	return os.Rename(tmp.Name(), dst)
}

// extractJar unpacks the single .txz inside jar into dst via a temp dir and
// a rename. Symlinks and exec bits are kept; everything is made readable by
// all so an unprivileged server user can run it.
func extractJar(jar, dst string) error {
	zr, err := zip.OpenReader(jar)
	if err != nil {
		return err
	}
	defer zr.Close()
	var txz *zip.File
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, ".txz") {
			txz = f
			break
		}
	}
	if txz == nil {
		return errors.New("no .txz inside")
	}
	rc, err := txz.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	xr, err := xz.NewReader(bufio.NewReaderSize(rc, 1<<20))
	if err != nil {
		return fmt.Errorf("reading %s: %w", txz.Name, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".extract-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // no-op once renamed
	if err := untar(tar.NewReader(xr), tmp); err != nil {
		return fmt.Errorf("reading %s: %w", txz.Name, err)
	}
	// Dirs not listed in the archive got umask-dependent modes; open them up.
	err = filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return os.Chmod(p, 0o755)
	})
	if err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

func untar(tr *tar.Reader, dir string) error {
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(filepath.FromSlash(h.Name))
		if name == "." {
			continue
		}
		if !filepath.IsLocal(name) {
			return fmt.Errorf("entry %q escapes the archive", h.Name)
		}
		target := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		mode := h.FileInfo().Mode().Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if mode&0o111 != 0 {
				mode |= 0o111
			}
			if err := writeFile(target, tr, mode|0o444); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
		case tar.TypeLink:
			if !filepath.IsLocal(h.Linkname) {
				return fmt.Errorf("hard link %q escapes the archive", h.Name)
			}
			if err := os.Link(filepath.Join(dir, h.Linkname), target); err != nil {
				return err
			}
		}
	}
}

func writeFile(path string, r io.Reader, mode fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Chmod(path, mode) // bypass the umask
}
