package pgbench

import "testing"

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
