package script

import "testing"

func TestParseProtocol(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Protocol
		ok   bool
	}{
		{"simple", Simple, true}, {"extended", Extended, true}, {"prepared", Prepared, true},
		{"", 0, false}, {"Prepared", 0, false}, {"prepare", 0, false},
	} {
		got, ok := ParseProtocol(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseProtocol(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
		if ok && got.String() != tc.in {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), tc.in)
		}
	}
}
