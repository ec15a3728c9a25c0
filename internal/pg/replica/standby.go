package replica

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/txload/txload/internal/pg/embedded"
	"github.com/txload/txload/pg"
)

// Standby turns dst, a running embedded server, into a streaming standby of
// src: a physical replication slot on src keeps the WAL from the backup on,
// a base backup of src is taken with pg_backup_start/pg_backup_stop (the
// embedded binaries have no pg_basebackup) and copied over dst's data
// directory, and dst restarts in hot standby, streaming from the slot (it
// answers reads, with hot_standby_feedback so that they are not cancelled).
// It returns once src's pg_stat_replication shows the standby streaming.
// name is the slot's and the standby's application_name.
func Standby(ctx context.Context, src, dst *embedded.Server, name string) error {
	return standby(ctx, src, dst, name, "")
}

// standby is Standby with the address (host:port) the standby streams
// from: "" is src's own.
func standby(ctx context.Context, src, dst *embedded.Server, name, from string) error {
	conn, err := pg.Connect(ctx, src.URL())
	if err != nil {
		return fmt.Errorf("connecting to the primary: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var version int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		return fmt.Errorf("reading the primary's version: %w", err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_create_physical_replication_slot($1, true)", name); err != nil {
		return fmt.Errorf("creating replication slot %s: %w", name, err)
	}
	// dst's files go; its owner (the server's user) owns the copy.
	owner, err := ownerOf(dst.DataDir())
	if err != nil {
		return err
	}
	if err := dst.Halt(false); err != nil {
		return fmt.Errorf("stopping the server that becomes the standby: %w", err)
	}
	start, stop := "SELECT pg_backup_start('txload standby', true)", "SELECT labelfile, spcmapfile FROM pg_backup_stop(true)"
	if version < 150000 {
		start, stop = "SELECT pg_start_backup('txload standby', true, false)", "SELECT labelfile, spcmapfile FROM pg_stop_backup(false, true)"
	}
	// The backup is this session's: it stays open until pg_backup_stop.
	if _, err := conn.Exec(ctx, start); err != nil {
		return fmt.Errorf("starting the base backup: %w", err)
	}
	copyErr := copyData(src.DataDir(), dst.DataDir(), owner)
	var label, spcmap string
	if err := conn.QueryRow(ctx, stop).Scan(&label, &spcmap); err != nil {
		return fmt.Errorf("ending the base backup: %w", err)
	}
	if copyErr != nil {
		return fmt.Errorf("copying the base backup: %w", copyErr)
	}
	cfg := conn.Config()
	host, port := cfg.Host, strconv.Itoa(int(cfg.Port))
	if from != "" {
		if host, port, err = net.SplitHostPort(from); err != nil {
			return fmt.Errorf("the address the standby streams from: %w", err)
		}
	}
	conf := fmt.Sprintf("\n# txload: a streaming standby\nprimary_conninfo = 'host=%s port=%s user=%s application_name=%s'\nprimary_slot_name = '%s'\nhot_standby = on\nhot_standby_feedback = on\n",
		host, port, cfg.User, name, name)
	for _, f := range []struct{ name, text string }{
		{"backup_label", label},
		{"tablespace_map", spcmap},
		{"standby.signal", ""},
	} {
		if f.name == "tablespace_map" && f.text == "" {
			continue
		}
		if err := writeOwned(filepath.Join(dst.DataDir(), f.name), f.text, owner, false); err != nil {
			return err
		}
	}
	if err := writeOwned(filepath.Join(dst.DataDir(), "postgresql.auto.conf"), conf, owner, true); err != nil {
		return err
	}
	if err := dst.Restart(ctx); err != nil {
		return fmt.Errorf("starting the standby: %w", err)
	}
	for {
		var streaming bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming')", name).Scan(&streaming); err != nil {
			return fmt.Errorf("waiting for the standby to stream: %w", err)
		}
		if streaming {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the standby to stream: %w", context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// owner is who owns the files of a data directory: the server's user.
type owner struct{ uid, gid int }

func (o owner) chown(path string) error {
	if o.uid < 0 || (o.uid == os.Geteuid() && o.gid == os.Getegid()) {
		return nil
	}
	return os.Lchown(path, o.uid, o.gid)
}

// emptied says a base backup leaves out the contents of the top-level
// directory dir: WAL (streamed from the slot), and what the server rebuilds
// at start.
func emptied(dir string) bool {
	switch dir {
	case "pg_wal", "pg_replslot", "pg_dynshmem", "pg_notify", "pg_serial", "pg_snapshots", "pg_stat_tmp", "pg_subtrans":
		return true
	}
	return false
}

// skipped says a base backup leaves out the top-level file name.
func skipped(name string) bool {
	switch name {
	case "postmaster.pid", "postmaster.opts", "backup_label", "tablespace_map", "standby.signal", "recovery.signal":
		return true
	}
	return false
}

// copyData replaces dst's contents by a copy of src's, as a base backup
// takes it: files that vanish while it runs are skipped (the WAL replayed
// from the backup's start recreates what they held).
func copyData(src, dst string, o owner) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		parent := filepath.Base(filepath.Dir(rel))
		if d.IsDir() {
			if err := os.Mkdir(to, 0o700); err != nil {
				return err
			}
			if err := o.chown(to); err != nil {
				return err
			}
			if emptied(rel) {
				// Keep pg_wal's archive_status, which the server expects.
				if rel == "pg_wal" {
					sub := filepath.Join(to, "archive_status")
					if err := os.Mkdir(sub, 0o700); err != nil {
						return err
					}
					if err := o.chown(sub); err != nil {
						return err
					}
				}
				return filepath.SkipDir
			}
			return nil
		}
		if (parent == "." && skipped(rel)) || strings.HasPrefix(d.Name(), "pgsql_tmp") || !d.Type().IsRegular() {
			return nil
		}
		return copyFile(path, to, o)
	})
}

func copyFile(from, to string, o owner) error {
	in, err := os.Open(from)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return o.chown(to)
}

// writeOwned writes (or appends to) a file of the data directory.
func writeOwned(path, text string, o owner, appendTo bool) error {
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if appendTo {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return o.chown(path)
}
