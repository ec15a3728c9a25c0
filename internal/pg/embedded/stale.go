package embedded

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	// tempPrefix names the temp dirs of servers; each holds ownerFile.
	tempPrefix = "txload-pg-"
	// ownerFile is locked (flock) by the txload process that owns the dir,
	// for as long as it lives: a dir whose lock can be taken is abandoned.
	// It holds the owner's pid and start time, for messages.
	ownerFile = "txload.owner"
	// lockless is how long a dir without ownerFile (made by a txload from
	// before the lock, or one killed between creating the dir and locking
	// it) must have been left unchanged before it may be removed, provided
	// no process uses it.
	lockless = 10 * time.Minute
	// staleStopTimeout bounds the wait for a stale server to exit.
	staleStopTimeout = 10 * time.Second
)

// own creates dir's owner file and locks it; the lock is the proof that
// dir is in use and lasts until the returned file is closed (or the
// process dies). The file is close-on-exec: no child inherits the lock.
func own(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, ownerFile), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating the owner file of %s: %w", dir, err)
	}
	ok, err := tryLock(f)
	if err == nil && !ok {
		err = errors.New("locked by another process")
	}
	if err == nil {
		_, err = fmt.Fprintf(f, "%d %s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339))
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking the owner file of %s: %w", dir, err)
	}
	return f, nil
}

// removeStale removes the server dirs in tmp left by txload processes that
// no longer exist (killed, or interrupted before they could clean up),
// after stopping any server process still running in them. A dir whose
// owner lives is never touched: its owner holds the lock. Each removal is
// reported to log; a dir that cannot be cleaned is left for next time.
func removeStale(tmp string, log io.Writer) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	var users map[string][]int // process ids by the dir they use
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		if users == nil {
			users = dirUsers(tmp)
		}
		if err := reclaim(dir, users[dir], log); err != nil && !errors.Is(err, errInUse) {
			fmt.Fprintf(log, "leaving %s: %v\n", dir, err)
		}
	}
}

var errInUse = errors.New("in use")

// reclaim removes dir if it is abandoned; pids are the processes that use
// it (nil where that cannot be known).
func reclaim(dir string, pids []int, log io.Writer) error {
	f, err := os.Open(filepath.Join(dir, ownerFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// No lock: abandoned if untouched for a while and, where processes
		// can be seen, unused.
		if !canSeeUsers || len(pids) > 0 || time.Since(lastChange(dir)) < lockless {
			return errInUse
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("removing it: %w", err)
		}
		fmt.Fprintf(log, "removed %s, left by an earlier txload\n", dir)
		return nil
	case err != nil:
		return errInUse // another user's, say
	}
	defer f.Close()
	ok, err := tryLock(f)
	if err != nil || !ok {
		return errInUse
	}
	owner := "a txload process that no longer exists"
	if line, _ := bufio.NewReader(f).ReadString('\n'); line != "" {
		if pid, started, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			owner = fmt.Sprintf("txload process %s (started %s), which no longer exists", pid, started)
		}
	}
	if err := stopStale(dir, pids, log); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing it: %w", err)
	}
	fmt.Fprintf(log, "removed %s, left by %s\n", dir, owner)
	return nil
}

// stopStale stops the server processes still running in an abandoned dir:
// SIGQUIT to the postmaster (immediate shutdown: its backends exit with it),
// then SIGKILL to whatever still uses the dir.
func stopStale(dir string, pids []int, log io.Writer) error {
	pm := postmasterPID(filepath.Join(dir, "data"))
	if !canSeeUsers {
		// Without a view of the processes a pid cannot be told from a
		// stranger that reused it: leave the dir while that pid lives.
		if pm > 0 && alive(pm) {
			return errInUse
		}
		return nil
	}
	if len(pids) == 0 {
		return nil
	}
	// Only PostgreSQL's own processes are stopped: anything else in the
	// dir (a shell someone opened there) keeps it. A process that ended
	// since the dir's users were listed (a backend whose session closed)
	// is neither.
	var others []int
	for _, pid := range pids {
		if !serverProcess(pid) && !ended(pid) {
			others = append(others, pid)
		}
	}
	if len(others) > 0 {
		return fmt.Errorf("abandoned, but processes %v that are not PostgreSQL's use it", others)
	}
	if pm > 0 && slices.Contains(pids, pm) {
		fmt.Fprintf(log, "stopping PostgreSQL (pid %d) left running in %s\n", pm, dir)
		quit(pm)
		if waitGone(dir, staleStopTimeout) {
			return nil
		}
	}
	killPIDs(pids)
	if !waitGone(dir, staleStopTimeout) {
		return fmt.Errorf("processes %v still use it", dirUsers(filepath.Dir(dir))[dir])
	}
	return nil
}

// lastChange is when dir or an entry in it (the server log, the data dir)
// last changed: a server halted for a while by its owner leaves no process,
// but has just written to its log.
func lastChange(dir string) time.Time {
	fi, err := os.Stat(dir)
	if err != nil {
		return time.Now()
	}
	last := fi.ModTime()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.ModTime().After(last) {
			last = info.ModTime()
		}
	}
	return last
}

// waitGone waits until no process uses dir.
func waitGone(dir string, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		if len(dirUsers(filepath.Dir(dir))[dir]) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// postmasterPID reads the pid on the first line of dataDir/postmaster.pid;
// 0 if there is none.
func postmasterPID(dataDir string) int {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
