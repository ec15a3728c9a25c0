package pgbench

import (
	"testing"

	"github.com/txload/txload/workload/pgbench/script"
)

// A statement's transaction edges are read past its leading comments: a
// "/* c */ COMMIT" was taken for no COMMIT, and a failure after it was
// retried, the committed block applied again (retest 11).
func TestTransactionEdges(t *testing.T) {
	for _, c := range []struct {
		text            string
		begins, commits bool
	}{
		{"BEGIN", true, false},
		{"commit", false, true},
		{"/* c */ COMMIT", false, true},
		{"-- a note\n  COMMIT", false, true},
		{"/* a /* nested */ one */ END", false, true},
		{"/* c */ BEGIN ISOLATION LEVEL SERIALIZABLE", true, false},
		{"INSERT INTO t VALUES (1); /* x */ COMMIT", false, true},
		{"/* unclosed COMMIT", false, false},
		{"SELECT 1 -- COMMIT", false, false},
		{"PREPARE TRANSACTION 'x'", false, true},
		{"/* ; */ COMMIT", false, true},
		{"/* a; b */ BEGIN", true, false},
		{"BEGIN;INSERT INTO t VALUES (';');COMMIT", true, true},
		{"SELECT 'x;'; -- ; \n END", false, true},
		{"SELECT $$ ; COMMIT $$", false, false},
		{"SELECT ';COMMIT'", false, false},
	} {
		b, cm := transactionEdges(c.text)
		if b != c.begins || cm != c.commits {
			t.Errorf("transactionEdges(%q) = %v, %v; want %v, %v", c.text, b, cm, c.begins, c.commits)
		}
	}
}

// What a statement's tag does not say: a SELECT that writes (a
// data-modifying WITH, SELECT INTO; not FOR UPDATE's lock; an EXECUTE of
// one, or of a statement the scripts do not PREPARE), a ROLLBACK TO
// SAVEPOINT, the savepoint named (retests 13 and 14).
func TestStatementTraits(t *testing.T) {
	for _, c := range []struct {
		text               string
		writes, rollbackTo bool
		savepoint          string
	}{
		{"SELECT 1", false, false, ""},
		{"WITH w AS (INSERT INTO pa(tag) VALUES ('cte') RETURNING id) SELECT count(*) FROM w", true, false, ""},
		{"with d as (delete from t where k = 1 returning k) select * from d", true, false, ""},
		{"SELECT * INTO copy FROM t", true, false, ""},
		{"SELECT * FROM t WHERE k = 1 FOR UPDATE", false, false, ""},
		{"SELECT * FROM t FOR NO KEY UPDATE SKIP LOCKED", false, false, ""},
		{"SELECT updated_at, 'INSERT' FROM t -- DELETE", false, false, ""},
		{"SELECT $$ UPDATE t SET k = 1 $$", false, false, ""},
		{`SELECT "insert" FROM t`, false, false, ""},
		{"ROLLBACK", false, false, ""},
		{"ROLLBACK TO SAVEPOINT s", false, true, "s"},
		{"rollback work to S1", false, true, "s1"},
		{"/* c */ ROLLBACK TRANSACTION TO SAVEPOINT s", false, true, "s"},
		{"ROLLBACK AND NO CHAIN", false, false, ""},
		{"SAVEPOINT A", false, false, "a"},
		{"RELEASE SAVEPOINT a", false, false, "a"},
		{"release a", false, false, "a"},
		{"EXECUTE pw", true, false, ""},
		{`EXECUTE "pw"`, true, false, ""},
		{`EXECUTE "PW"`, true, false, ""},
		{`SAVEPOINT "A"`, false, false, "A"},
		{`ROLLBACK TO SAVEPOINT "a""b"`, false, true, `a"b`},
		{"SAVEPOINT É", false, false, "É"},
		{"SAVEPOINT Éa", false, false, "Éa"},
		{"EXECUTE pr(1)", false, false, ""},
		{"execute unknown", true, false, ""},
	} {
		preps := map[string]bool{"pw": true, "pr": false}
		if w, r, sp := statementTraits(c.text, preps); w != c.writes || r != c.rollbackTo || sp != c.savepoint {
			t.Errorf("statementTraits(%q) = %v, %v, %q; want %v, %v, %q", c.text, w, r, sp, c.writes, c.rollbackTo, c.savepoint)
		}
	}
}

// A statement the scripts PREPARE writes where its text does, or where it
// takes a variable (its statement given with -D: retest 15), in any of
// the run's scripts.
func TestPreparedWrites(t *testing.T) {
	var scripts []*script.Script
	for name, src := range map[string]string{
		"a.sql": "PREPARE pr AS SELECT 1;\nPREPARE pw AS WITH w AS (INSERT INTO t VALUES (1) RETURNING k) SELECT k FROM w;\n",
		"b.sql": "PREPARE \"Pq\" AS :q;\nPREPARE pu(int) AS UPDATE t SET k = $1;\n",
	} {
		s, err := script.Parse(name, src)
		if err != nil {
			t.Fatal(err)
		}
		scripts = append(scripts, s)
	}
	got := preparedWrites(scripts)
	want := map[string]bool{"pr": false, "pw": true, "Pq": true, "pu": true}
	if len(got) != len(want) {
		t.Fatalf("preparedWrites = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("preparedWrites[%q] = %v, want %v", k, got[k], v)
		}
	}
}
