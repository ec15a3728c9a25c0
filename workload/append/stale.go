package append

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const (
	// spoolPrefix names the history's spool in $TMPDIR.
	spoolPrefix = "txload-history-"
	// staleSpool is how long a spool must have been left unchanged before
	// a later run removes it: one left by a txload from before the spool
	// was removed at its creation (killed with SIGKILL), or made where the
	// system does not allow that. A running append writes to its spool at
	// every operation; one untouched this long is no longer written.
	staleSpool = time.Hour
)

// removeStaleSpools removes the history spools in dir left unchanged
// since staleSpool before now, each reported to log (if any). A spool that
// cannot be removed is left for next time.
func removeStaleSpools(dir string, now time.Time, log io.Writer) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), spoolPrefix) {
			continue
		}
		info, err := e.Info()
		if err != nil || now.Sub(info.ModTime()) < staleSpool {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if os.Remove(path) == nil && log != nil {
			fmt.Fprintf(log, "removed %s, a history spool left by an earlier txload (unchanged since %s)\n", path, info.ModTime().UTC().Format(time.RFC3339))
		}
	}
}
