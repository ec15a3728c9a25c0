package ycsb

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txload/txload/workload"
)

// explained accepts a growth of the table's weighted sum only as the
// committed read-modify-writes' weights plus a subset of those in doubt
// (a serialization failure is not in doubt; a program left in its COMMIT
// is), and says when too many are in doubt to try.
func TestRMWRowsExplained(t *testing.T) {
	r := &rmwRows{seed: 42}
	w := func(k int64) uint64 { return r.weight(k) }
	r.add(w(1))
	r.add(w(1))
	r.add(w(2))
	r.ended(w(3), errors.New("connection lost"))
	r.ended(w(4), &pgconn.PgError{Code: "40001"})
	r.progs = []*program{{inCommit: true, weight: w(5)}, {weight: w(6)}}
	for _, tc := range []struct {
		name string
		grew uint64
		ok   bool
	}{
		{"the committed", 2*w(1) + w(2), true},
		{"and one in doubt", 2*w(1) + w(2) + w(3), true},
		{"and the one left in flight", 2*w(1) + w(2) + w(5), true},
		{"and both", 2*w(1) + w(2) + w(3) + w(5), true},
		{"a count moved to another row", w(1) + 2*w(2), false},
		{"one refused by the server", 2*w(1) + w(2) + w(4), false},
		{"one of a program not in its commit", 2*w(1) + w(2) + w(6), false},
		{"one lost", 2 * w(1), false},
	} {
		if ok, checked, _ := r.explained(tc.grew); ok != tc.ok || !checked {
			t.Errorf("%s: explained %v (checked %v), want %v", tc.name, ok, checked, tc.ok)
		}
	}
	for k := range int64(workload.MaxInDoubt) {
		r.ended(w(100+k), errors.New("connection lost"))
	}
	if _, checked, doubt := r.explained(0); checked || doubt != workload.MaxInDoubt+2 {
		t.Errorf("%d in doubt: checked %v, want not checked", doubt, checked)
	}
}
