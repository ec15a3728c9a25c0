package embedded

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"context"
	"crypto/sha256"
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

// releasesURL is the directory of a jar's artifact, which lists its
// releases: url less its last two elements (the release and the file).
func releasesURL(url string) string {
	dir := url
	for range 2 {
		if i := strings.LastIndexByte(dir, '/'); i > 0 {
			dir = dir[:i]
		}
	}
	return dir + "/"
}

// ensureRuntime returns the directory holding bin/, lib/ and share/ for v,
// downloading and extracting it into cacheDir on first use, and extracting
// it again when it is damaged: its files are checked against the manifest
// extraction wrote (sizes always, contents where a modification time
// changed, every file's contents with full). The jar is kept to extract
// from. A lock file serialises fetching and repairs between processes;
// readers of a finished tree need no lock because it appears by rename.
func ensureRuntime(ctx context.Context, cacheDir string, v Version, log io.Writer, public, full bool) (string, error) {
	plat, err := platform()
	if err != nil {
		return "", err
	}
	key := v.Full + "-" + runtime.GOOS + "-" + runtime.GOARCH
	dir := filepath.Join(cacheDir, key)
	if m, err := readManifest(dir); err == nil && m.check(dir, full) == "" {
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
	jar := filepath.Join(cacheDir, key+".jar")
	getJar := func(why string) error {
		if _, err := os.Stat(jar); err == nil {
			return nil
		}
		fmt.Fprintf(log, "fetching PostgreSQL %s from Maven Central (%s)\n", v.Full, why)
		return download(ctx, jarURL(plat, v), jar)
	}
	// Checked again: another process may have fetched or repaired it while
	// we waited.
	m, err := readManifest(dir)
	switch {
	case err == nil:
		problem := m.check(dir, full)
		if problem == "" {
			return dir, nil
		}
		fmt.Fprintf(log, "the PostgreSQL %s binaries in %s are damaged (%s): extracting them again\n", v.Full, dir, problem)
	case errors.Is(err, errNoManifest) && complete(dir):
		// Extracted by a txload that wrote no manifest: check it against
		// the jar, once.
		if err := getJar("once, to check the binaries extracted by an earlier txload"); err != nil {
			fmt.Fprintf(log, "cannot check the PostgreSQL %s binaries in %s against their archive (%v): using them as they are\n", v.Full, dir, err)
			return dir, nil
		}
		problem, err := checkAgainstJar(jar, dir)
		if err != nil {
			os.Remove(jar) // possibly corrupt; fetch afresh next time
			return "", fmt.Errorf("reading %s: %w", jar, err)
		}
		if problem == "" {
			return dir, nil
		}
		fmt.Fprintf(log, "the PostgreSQL %s binaries in %s are damaged (%s): extracting them again\n", v.Full, dir, problem)
	}
	why := "first run only"
	if complete(dir) {
		why = "to extract the binaries again"
	}
	if err := getJar(why); err != nil {
		return "", err
	}
	fmt.Fprintf(log, "extracting PostgreSQL %s into %s\n", v.Full, dir)
	if err := extractJar(jar, dir); err != nil {
		os.Remove(jar) // possibly corrupt; fetch afresh next time
		return "", fmt.Errorf("extracting %s: %w", jar, err)
	}
	if m, err := readManifest(dir); err != nil || m.check(dir, true) != "" {
		return "", fmt.Errorf("the PostgreSQL %s binaries extracted into %s do not match their archive: is the disk full or failing?", v.Full, dir)
	}
	return dir, nil
}

// checkAgainstJar compares a runtime dir that has no manifest with the
// archive's contents, and writes the manifest if they match.
func checkAgainstJar(jar, dir string) (problem string, err error) {
	tr, closeJar, err := openTxz(jar)
	if err != nil {
		return "", err
	}
	defer closeJar()
	m, err := manifestOfArchive(tr)
	if err != nil {
		return "", err
	}
	if problem := m.check(dir, true); problem != "" {
		return problem, nil
	}
	if err := m.write(dir); err != nil {
		return "", fmt.Errorf("writing the manifest: %w", err)
	}
	return "", nil
}

// complete reports whether dir holds an extracted runtime.
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
		// The artifact's directory lists the releases that are.
		return fmt.Errorf("not published for %s/%s (%s); the releases that are: %s",
			runtime.GOOS, runtime.GOARCH, resp.Status, releasesURL(url))
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

// openTxz opens the single .txz inside jar as a tar stream.
func openTxz(jar string) (*tar.Reader, func(), error) {
	zr, err := zip.OpenReader(jar)
	if err != nil {
		return nil, nil, err
	}
	var txz *zip.File
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, ".txz") {
			txz = f
			break
		}
	}
	if txz == nil {
		zr.Close()
		return nil, nil, errors.New("no .txz inside")
	}
	rc, err := txz.Open()
	if err != nil {
		zr.Close()
		return nil, nil, err
	}
	closeAll := func() { rc.Close(); zr.Close() }
	xr, err := xz.NewReader(bufio.NewReaderSize(rc, 1<<20))
	if err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("reading %s: %w", txz.Name, err)
	}
	return tar.NewReader(xr), closeAll, nil
}

// extractJar unpacks the single .txz inside jar into dst via a temp dir and
// a rename, with a manifest of what it wrote. Symlinks and exec bits are
// kept; everything is made readable by all so an unprivileged server user
// can run it. A dst already there (damaged) is replaced.
func extractJar(jar, dst string) error {
	tr, closeJar, err := openTxz(jar)
	if err != nil {
		return err
	}
	defer closeJar()
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".extract-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // no-op once renamed
	m, err := untar(tr, tmp)
	if err != nil {
		return fmt.Errorf("reading the archive: %w", err)
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
	if err := m.write(tmp); err != nil {
		return fmt.Errorf("writing the manifest: %w", err)
	}
	return replaceDir(tmp, dst)
}

// replaceDir renames src to dst, moving a dst that exists aside first and
// removing it after: a server started from it keeps its open files.
func replaceDir(src, dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		old, err := os.MkdirTemp(filepath.Dir(dst), ".damaged-*")
		if err != nil {
			return err
		}
		if err := os.Rename(dst, filepath.Join(old, "tree")); err != nil {
			os.Remove(old)
			return err
		}
		defer os.RemoveAll(old)
	}
	return os.Rename(src, dst)
}

// untar writes the archive's files into dir and returns their manifest.
func untar(tr *tar.Reader, dir string) (*manifest, error) {
	var rec recorder
	sums := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return rec.done(), nil
		}
		if err != nil {
			return nil, err
		}
		name := filepath.Clean(filepath.FromSlash(h.Name))
		if name == "." {
			continue
		}
		if !filepath.IsLocal(name) {
			return nil, fmt.Errorf("entry %q escapes the archive", h.Name)
		}
		target := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return nil, err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return nil, err
			}
		case tar.TypeReg:
			mode := extractedMode(h)
			n, sum, err := writeFile(target, tr, mode)
			if err != nil {
				return nil, err
			}
			rec.file(name, n, mode, sum)
			sums[name] = sum
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, target); err != nil {
				return nil, err
			}
			rec.link(name, h.Linkname)
		case tar.TypeLink:
			link := filepath.Clean(filepath.FromSlash(h.Linkname))
			if !filepath.IsLocal(link) {
				return nil, fmt.Errorf("hard link %q escapes the archive", h.Name)
			}
			if err := os.Link(filepath.Join(dir, link), target); err != nil {
				return nil, err
			}
			fi, err := os.Lstat(target)
			if err != nil {
				return nil, err
			}
			if sum, ok := sums[link]; ok {
				rec.file(name, fi.Size(), fi.Mode().Perm(), sum)
			}
		}
	}
}

// writeFile writes r to a new file at path and returns its size and SHA-256.
func writeFile(path string, r io.Reader, mode fs.FileMode) (int64, []byte, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return 0, nil, err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if err != nil {
		f.Close()
		return 0, nil, err
	}
	if err := f.Close(); err != nil {
		return 0, nil, err
	}
	return n, h.Sum(nil), os.Chmod(path, mode) // bypass the umask
}
