package pg

import (
	"strings"
	"testing"

	"github.com/txload/txload/internal/pgtest"
)

func TestParseIsolation(t *testing.T) {
	tests := []struct {
		in   string
		want Isolation
	}{
		{"read committed", ReadCommitted},
		{"READ COMMITTED", ReadCommitted},
		{"Read Committed", ReadCommitted},
		{"read-committed", ReadCommitted},
		{"read_committed", ReadCommitted},
		{"READ_COMMITTED", ReadCommitted},
		{"  read   committed  ", ReadCommitted},
		{"read -_committed", ReadCommitted},
		{"rc", ReadCommitted},
		{"RC", ReadCommitted},
		{"repeatable read", RepeatableRead},
		{"REPEATABLE READ", RepeatableRead},
		{"repeatable-read", RepeatableRead},
		{"Repeatable_Read", RepeatableRead},
		{"rr", RepeatableRead},
		{"RR", RepeatableRead},
		{"serializable", Serializable},
		{"SERIALIZABLE", Serializable},
		{"Serializable", Serializable},
		{"ser", Serializable},
		{"SER", Serializable},
		{" ser ", Serializable},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseIsolation(tt.in)
			if err != nil {
				t.Fatalf("ParseIsolation(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("ParseIsolation(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseIsolationRejects(t *testing.T) {
	for _, in := range []string{
		"foo", "", " ", "read", "committed", "readcommitted", "repeatable",
		"read uncommitted", "serial", "serialisable", "r c", "rc rr", "-",
		"snapshot", "SNAPSHOT", "si", "snapshot isolation", "ru",
	} {
		t.Run(in, func(t *testing.T) {
			got, err := ParseIsolation(in)
			if err == nil {
				t.Fatalf("ParseIsolation(%q) = %v, want an error", in, got)
			}
			msg := err.Error()
			if !strings.Contains(msg, `"`+in+`"`) {
				t.Errorf("error %q does not quote the input %q", msg, in)
			}
			for _, allowed := range []string{"read committed", "repeatable read", "serializable", "rc", "rr", "ser"} {
				if !strings.Contains(msg, allowed) {
					t.Errorf("error %q does not name %q", msg, allowed)
				}
			}
		})
	}
}

// TestParseIsolationMessages: the one line a refused --isolation gets.
// snapshot used to run repeatable read without a word.
func TestParseIsolationMessages(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"snapshot", `"snapshot" is not an isolation level (allowed: read committed, repeatable read, serializable, or rc, rr, ser; PostgreSQL's repeatable read is snapshot isolation)`},
		{"SI", `"SI" is not an isolation level (allowed: read committed, repeatable read, serializable, or rc, rr, ser; PostgreSQL's repeatable read is snapshot isolation)`},
		{"read uncommitted", `"read uncommitted" is not an isolation level (allowed: read committed, repeatable read, serializable, or rc, rr, ser; PostgreSQL runs read uncommitted as read committed)`},
		{"linearizable", `"linearizable" is not an isolation level (allowed: read committed, repeatable read, serializable, or rc, rr, ser)`},
		{"\x00\n", `"\x00\n" is not an isolation level (allowed: read committed, repeatable read, serializable, or rc, rr, ser)`},
	} {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParseIsolation(tt.in)
			if err == nil || err.Error() != tt.want {
				t.Errorf("ParseIsolation(%q) = %v, want %s", tt.in, err, tt.want)
			}
		})
	}
	// What a server answers to SHOW transaction_isolation is read leniently.
	for in, want := range map[string]Isolation{"snapshot": RepeatableRead, "repeatable read": RepeatableRead, "read committed": ReadCommitted, "serializable": Serializable} {
		if got, err := serverIsolation(in); err != nil || got != want {
			t.Errorf("serverIsolation(%q) = %v, %v, want %v", in, got, err, want)
		}
	}
}

func TestIsolationNames(t *testing.T) {
	tests := []struct {
		i            Isolation
		name, short  string
		begin        string
		strongerThan []Isolation
	}{
		{ReadCommitted, "read committed", "rc", "BEGIN ISOLATION LEVEL READ COMMITTED", nil},
		{RepeatableRead, "repeatable read", "rr", "BEGIN ISOLATION LEVEL REPEATABLE READ", []Isolation{ReadCommitted}},
		{Serializable, "serializable", "ser", "BEGIN ISOLATION LEVEL SERIALIZABLE", []Isolation{ReadCommitted, RepeatableRead}},
	}
	for _, tt := range tests {
		t.Run(tt.short, func(t *testing.T) {
			if got := tt.i.String(); got != tt.name {
				t.Errorf("String() = %q, want %q", got, tt.name)
			}
			if got := tt.i.Short(); got != tt.short {
				t.Errorf("Short() = %q, want %q", got, tt.short)
			}
			if got := tt.i.BeginSQL(); got != tt.begin {
				t.Errorf("BeginSQL() = %q, want %q", got, tt.begin)
			}
			for _, s := range []string{tt.i.String(), tt.i.Short()} {
				if got, err := ParseIsolation(s); err != nil || got != tt.i {
					t.Errorf("ParseIsolation(%q) = %v, %v, want %v", s, got, err, tt.i)
				}
			}
			for _, weaker := range tt.strongerThan {
				if !(weaker < tt.i) {
					t.Errorf("%v is not ordered before %v", weaker, tt.i)
				}
			}
		})
	}
	if got := Isolation(7).String(); got != "isolation(7)" {
		t.Errorf("Isolation(7).String() = %q", got)
	}
	if got := Isolation(-1).String(); got != "isolation(-1)" {
		t.Errorf("Isolation(-1).String() = %q", got)
	}
}

func TestEffective(t *testing.T) {
	url := srv.NewDatabase(t)
	for _, level := range []Isolation{ReadCommitted, RepeatableRead, Serializable} {
		t.Run(level.Short(), func(t *testing.T) {
			ctx := testCtx(t)
			conn := pgtest.Conn(t, url)
			// Start from a different session default, so that reading back
			// the default would not pass by accident.
			other := Serializable
			if level == Serializable {
				other = ReadCommitted
			}
			if _, err := conn.Exec(ctx, "SET default_transaction_isolation = '"+other.String()+"'"); err != nil {
				t.Fatal(err)
			}
			got, err := Effective(ctx, conn, level)
			if err != nil {
				t.Fatalf("Effective(%v): %v", level, err)
			}
			if got != level {
				t.Errorf("Effective(%v) = %v", level, got)
			}
			if st := conn.PgConn().TxStatus(); st != 'I' {
				t.Errorf("Effective left the connection in transaction status %q, want idle", st)
			}
		})
	}
}

// TestBeginSQL runs BeginSQL on the real server and reads the level back.
func TestBeginSQL(t *testing.T) {
	ctx := testCtx(t)
	conn := pgtest.Conn(t, srv.NewDatabase(t))
	for _, level := range []Isolation{ReadCommitted, RepeatableRead, Serializable} {
		if _, err := conn.Exec(ctx, level.BeginSQL()); err != nil {
			t.Fatalf("%s: %v", level.BeginSQL(), err)
		}
		var got string
		if err := conn.QueryRow(ctx, "SHOW transaction_isolation").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		if got != level.String() {
			t.Errorf("after %q the server runs %q, want %q", level.BeginSQL(), got, level.String())
		}
	}
}

func TestEffectiveError(t *testing.T) {
	ctx := testCtx(t)
	conn := pgtest.Conn(t, srv.NewDatabase(t))
	if err := conn.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := Effective(ctx, conn, Serializable); err == nil {
		t.Fatalf("Effective on a closed connection = %v, want an error", got)
	} else if !strings.HasPrefix(err.Error(), "reading back the isolation level: ") {
		t.Errorf("error %q lacks its context", err)
	}
}
