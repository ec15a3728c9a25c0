package pg

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Isolation is a transaction isolation level, weakest first.
type Isolation int

// The levels txload runs at.
const (
	ReadCommitted Isolation = iota
	RepeatableRead
	Serializable
)

var isolationNames = [...]string{"read committed", "repeatable read", "serializable"}

// String returns the SQL name, e.g. "read committed".
func (i Isolation) String() string {
	if i >= 0 && int(i) < len(isolationNames) {
		return isolationNames[i]
	}
	return fmt.Sprintf("isolation(%d)", int(i))
}

// Short returns rc, rr or ser.
func (i Isolation) Short() string {
	if i >= 0 && int(i) < len(isolationNames) {
		return [...]string{"rc", "rr", "ser"}[i]
	}
	return i.String()
}

// ParseIsolation accepts the SQL names in any case, with spaces, dashes or
// underscores, and the short forms rc, rr, ser. Nothing else: a name such as
// snapshot would have to be mapped to a level that some servers run
// differently, and the flag is parsed before any server is known.
func ParseIsolation(s string) (Isolation, error) {
	n := normalIsolation(s)
	switch n {
	case "read committed", "rc":
		return ReadCommitted, nil
	case "repeatable read", "rr":
		return RepeatableRead, nil
	case "serializable", "ser":
		return Serializable, nil
	}
	hint := ""
	switch n {
	case "snapshot", "si", "snapshot isolation":
		hint = "; PostgreSQL's repeatable read is snapshot isolation"
	case "read uncommitted", "ru":
		hint = "; PostgreSQL runs read uncommitted as read committed"
	}
	return 0, fmt.Errorf("%q is not an isolation level (allowed: read committed, repeatable read, serializable, or rc, rr, ser%s)", s, hint)
}

func normalIsolation(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return r == ' ' || r == '-' || r == '_'
	}), " ")
}

// serverIsolation reads the level a server says a transaction runs at
// (SHOW transaction_isolation). Servers may name repeatable read snapshot,
// as CockroachDB did before 23.2.
func serverIsolation(s string) (Isolation, error) {
	switch normalIsolation(s) {
	case "snapshot":
		return RepeatableRead, nil
	}
	return ParseIsolation(s)
}

// BeginSQL is the statement that opens a transaction at i.
func (i Isolation) BeginSQL() string {
	return "BEGIN ISOLATION LEVEL " + strings.ToUpper(i.String())
}

// Effective opens a transaction at i and reads back the level the server
// actually runs it at: a server may silently upgrade (CockroachDB runs READ
// COMMITTED as SERIALIZABLE unless enabled).
func Effective(ctx context.Context, conn *pgx.Conn, i Isolation) (Isolation, error) {
	var got string
	err := pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET TRANSACTION ISOLATION LEVEL "+strings.ToUpper(i.String())); err != nil {
			return err
		}
		return tx.QueryRow(ctx, "SHOW transaction_isolation").Scan(&got)
	})
	if err != nil {
		return 0, fmt.Errorf("reading back the isolation level: %w", err)
	}
	eff, err := serverIsolation(got)
	if err != nil {
		return 0, fmt.Errorf("reading back the isolation level: %w", err)
	}
	return eff, nil
}

// ServerIsolation reads the level a server reports for a transaction
// (SHOW transaction_isolation, current_setting('transaction_isolation')).
func ServerIsolation(s string) (Isolation, error) { return serverIsolation(s) }
