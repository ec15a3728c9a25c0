package script

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestBuiltins(t *testing.T) {
	tests := []struct {
		arg, name, title string
		kinds            []Kind
	}{
		{"tpcb-like", "tpcb-like", "<builtin: TPC-B (sort of)>", []Kind{Set, Set, Set, Set, SQL, SQL, SQL, SQL, SQL, SQL, SQL}},
		{"simple-update", "simple-update", "<builtin: simple update>", []Kind{Set, Set, Set, Set, SQL, SQL, SQL, SQL, SQL}},
		{"select-only", "select-only", "<builtin: select only>", []Kind{Set, SQL}},
		// pgbench 15 confirms: -b takes unambiguous prefixes.
		{"tpcb", "tpcb-like", "<builtin: TPC-B (sort of)>", nil},
		{"t", "tpcb-like", "<builtin: TPC-B (sort of)>", nil},
		{"simple", "simple-update", "<builtin: simple update>", nil},
		{"sel", "select-only", "<builtin: select only>", nil},
	}
	for _, tt := range tests {
		s, err := Builtin(tt.arg)
		if err != nil {
			t.Errorf("Builtin(%q): %v", tt.arg, err)
			continue
		}
		if s.Name != tt.name || s.Title != tt.title || s.Weight != 1 {
			t.Errorf("Builtin(%q): Name, Title, Weight = %q, %q, %d", tt.arg, s.Name, s.Title, s.Weight)
		}
		checkCommon(t, s, tt.title)
		if tt.kinds != nil {
			var kinds []Kind
			for _, c := range s.Commands {
				kinds = append(kinds, c.Kind)
			}
			if !slices.Equal(kinds, tt.kinds) {
				t.Errorf("Builtin(%q): kinds %v, want %v", tt.arg, kinds, tt.kinds)
			}
		}
	}
}

// The tpcb-like builtin is the seed's tpcb-original.sql.
func TestBuiltinTPCBMatchesFile(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "tpcb-original.sql"))
	if err != nil {
		t.Fatal(err)
	}
	text, err := BuiltinText("tpcb-like")
	if err != nil {
		t.Fatal(err)
	}
	if text != string(src) {
		t.Errorf("tpcb-like text differs from testdata/tpcb-original.sql:\n%s", text)
	}
	b, _ := Builtin("tpcb-like")
	f := parseFile(t, "tpcb-original.sql")
	if !slices.Equal(summaries(b), summaries(f)) {
		t.Errorf("builtin and file parse differently")
	}
}

func TestBuiltinErrors(t *testing.T) {
	for _, tt := range []struct{ arg, want string }{
		// pgbench 15 confirms the messages (it then lists the scripts).
		{"x", `no builtin script found for name "x" (available: tpcb-like, simple-update, select-only)`},
		{"tpcb-like-x", `no builtin script found for name "tpcb-like-x" (available: tpcb-like, simple-update, select-only)`},
		{"s", `ambiguous builtin name: 2 builtin scripts found for prefix "s" (available: tpcb-like, simple-update, select-only)`},
		{"", `ambiguous builtin name: 3 builtin scripts found for prefix "" (available: tpcb-like, simple-update, select-only)`},
	} {
		_, err := Builtin(tt.arg)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Builtin(%q) = %v, want %s", tt.arg, err, tt.want)
		}
	}
}

func TestListBuiltins(t *testing.T) {
	// As pgbench -b list prints it.
	want := "Available builtin scripts:\n" +
		"      tpcb-like: <builtin: TPC-B (sort of)>\n" +
		"  simple-update: <builtin: simple update>\n" +
		"    select-only: <builtin: select only>\n"
	if got := ListBuiltins(); got != want {
		t.Errorf("ListBuiltins:\n%s\nwant\n%s", got, want)
	}
}

func TestParseFileArg(t *testing.T) {
	for _, tt := range []struct {
		arg    string
		path   string
		weight int
		err    string
	}{
		{"file.sql", "file.sql", 1, ""},
		{"file.sql@5", "file.sql", 5, ""},
		{"dir/file.sql@0", "dir/file.sql", 0, ""},
		// pgbench 15 confirms each of the following.
		{"a@b@2", "a@b", 2, ""},
		{"file.sql@+3", "file.sql", 3, ""},
		{"file.sql@ 3", "file.sql", 3, ""},
		{"file.sql@2147483647", "file.sql", 2147483647, ""},
		{"file.sql@", "", 0, "invalid weight specification: @"},
		{"file.sql@x", "", 0, "invalid weight specification: @x"},
		{"file.sql@1x", "", 0, "invalid weight specification: @1x"},
		{"file.sql@0x10", "", 0, "invalid weight specification: @0x10"},
		{"file.sql@ ", "", 0, "invalid weight specification: @ "},
		{"file.sql@+-1", "", 0, "invalid weight specification: @+-1"},
		{"file.sql@-1", "", 0, "weight specification out of range (0 .. 2147483647): -1"},
		{"file.sql@2147483648", "", 0, "weight specification out of range (0 .. 2147483647): 2147483648"},
		{"file.sql@99999999999", "", 0, "weight specification out of range (0 .. 2147483647): 99999999999"},
		{"file.sql@99999999999999999999", "", 0, "invalid weight specification: @99999999999999999999"},
	} {
		path, weight, err := ParseFileArg(tt.arg)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("ParseFileArg(%q) error = %v, want %s", tt.arg, err, tt.err)
			}
			continue
		}
		if err != nil || path != tt.path || weight != tt.weight {
			t.Errorf("ParseFileArg(%q) = %q, %d, %v; want %q, %d", tt.arg, path, weight, err, tt.path, tt.weight)
		}
	}
}
