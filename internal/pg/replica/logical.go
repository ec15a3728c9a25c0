package replica

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/pg"
)

// SourceSettings are the server settings a replication source needs, for
// embedded.Options.Settings: logical decoding, and COMMIT waiting for its
// WAL to be written (the embedded server's default of
// synchronous_commit=off would let a commit's WAL wait up to
// wal_writer_delay, 200ms, before any sender could ship it: lag that is
// the source's, not the replication's). The WAL senders and slots keep
// their defaults (10 each): a standby must have at least as many as its
// primary, and has the defaults.
func SourceSettings() []string {
	return []string{"wal_level=logical", "synchronous_commit=on"}
}

// Logical is a publication on a source and its subscription on a
// destination.
type Logical struct {
	Name     string // of the publication, the subscription and its slot
	src, dst string
}

// StartLogical publishes tables on the database of srcURL and subscribes
// the database of dstURL to them, with the initial copy, then waits until
// every table is synchronized. The tables must exist on both sides (the
// destination's empty: the copy fills them). Tables without a primary key
// get REPLICA IDENTITY FULL on the source, so that updates and deletes of
// them can be published. connInfo is how the destination reaches the
// source (srcURL itself when both run on this machine).
func StartLogical(ctx context.Context, srcURL, dstURL, connInfo, name string, tables []string) (*Logical, error) {
	l := &Logical{Name: name, src: srcURL, dst: dstURL}
	src, err := pg.Connect(ctx, srcURL)
	if err != nil {
		return nil, fmt.Errorf("connecting to the replication source: %w", err)
	}
	defer src.Close(context.WithoutCancel(ctx))
	var ids []string
	for _, t := range tables {
		ids = append(ids, pgx.Identifier{t}.Sanitize())
		var keyed bool
		if err := src.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_index WHERE indrelid = $1::regclass AND indisprimary)`, t).Scan(&keyed); err != nil {
			return nil, fmt.Errorf("looking for the primary key of %s: %w", t, err)
		}
		if !keyed {
			if _, err := src.Exec(ctx, "ALTER TABLE "+pgx.Identifier{t}.Sanitize()+" REPLICA IDENTITY FULL"); err != nil {
				return nil, fmt.Errorf("setting the replica identity of %s: %w", t, err)
			}
		}
	}
	if _, err := src.Exec(ctx, "CREATE PUBLICATION "+pgx.Identifier{name}.Sanitize()+" FOR TABLE "+strings.Join(ids, ", ")); err != nil {
		return nil, fmt.Errorf("creating publication %s: %w", name, err)
	}
	dst, err := pg.Connect(ctx, dstURL)
	if err != nil {
		return nil, fmt.Errorf("connecting to the replication destination: %w", err)
	}
	defer dst.Close(context.WithoutCancel(ctx))
	create := fmt.Sprintf("CREATE SUBSCRIPTION %s CONNECTION '%s' PUBLICATION %s WITH (copy_data = true)",
		pgx.Identifier{name}.Sanitize(), strings.ReplaceAll(connInfo, "'", "''"), pgx.Identifier{name}.Sanitize())
	if _, err := dst.Exec(ctx, create, pgx.QueryExecModeSimpleProtocol); err != nil {
		return nil, fmt.Errorf("creating subscription %s: %w", name, err)
	}
	// Every table's initial copy done ('r'eady; 's'ynchronized means the
	// apply worker is about to take it over).
	for {
		var pending int
		if err := dst.QueryRow(ctx, `SELECT count(*) FROM pg_subscription_rel r JOIN pg_subscription s ON s.oid = r.srsubid
			WHERE s.subname = $1 AND r.srsubstate NOT IN ('r', 's')`, name).Scan(&pending); err != nil {
			return nil, fmt.Errorf("waiting for subscription %s to synchronize: %w", name, err)
		}
		if pending == 0 {
			return l, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for subscription %s to synchronize: %w", name, context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Drop removes the subscription (and its slot on the source), then the
// publication.
func (l *Logical) Drop(ctx context.Context) error {
	var errs []error
	for _, s := range []struct{ url, sql string }{
		{l.dst, "DROP SUBSCRIPTION IF EXISTS " + pgx.Identifier{l.Name}.Sanitize()},
		{l.src, "DROP PUBLICATION IF EXISTS " + pgx.Identifier{l.Name}.Sanitize()},
	} {
		conn, err := pg.Connect(ctx, s.url)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := conn.Exec(ctx, s.sql, pgx.QueryExecModeSimpleProtocol); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.sql, err))
		}
		conn.Close(ctx)
	}
	return errors.Join(errs...)
}
