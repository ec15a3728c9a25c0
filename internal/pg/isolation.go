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
// underscores, and the short forms rc, rr, ser.
func ParseIsolation(s string) (Isolation, error) {
	n := strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return r == ' ' || r == '-' || r == '_'
	}), " ")
	switch n {
	case "read committed", "rc":
		return ReadCommitted, nil
	case "repeatable read", "rr", "snapshot", "si":
		return RepeatableRead, nil
	case "serializable", "ser":
		return Serializable, nil
	}
	return 0, fmt.Errorf("%q is not an isolation level (allowed: read committed, repeatable read, serializable, or rc, rr, ser)", s)
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
	eff, err := ParseIsolation(got)
	if err != nil {
		return 0, fmt.Errorf("reading back the isolation level: %w", err)
	}
	return eff, nil
}
