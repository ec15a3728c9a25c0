package vote

import "testing"

// The audit explains the table by the committed votes and exactly k of
// those in doubt, k being what the count says committed of them; a row
// swapped, or another k, is not explained.
func TestIdentityExplains(t *testing.T) {
	id := newIdentity()
	var buf []byte
	h := func(article, user int64) uint64 {
		var x uint64
		buf, x = id.hash(buf, article, user)
		return x
	}
	id.before = 12345
	id.Ended(h(1, 1), nil)
	id.Ended(h(2, 2), nil)
	for _, x := range []uint64{h(3, 3), h(4, 4), h(5, 5)} {
		id.Doubt(x)
	}
	for _, tc := range []struct {
		name       string
		after      uint64
		unknown, k int64
		ok, tried  bool
	}{
		{"none of the doubt", 12345 + h(1, 1) + h(2, 2), 3, 0, true, true},
		{"two of the doubt", 12345 + h(1, 1) + h(2, 2) + h(3, 3) + h(5, 5), 3, 2, true, true},
		{"two of the doubt, the count says one", 12345 + h(1, 1) + h(2, 2) + h(3, 3) + h(5, 5), 3, 1, false, true},
		{"a vote swapped, count kept", 12345 + h(1, 1) + h(1, 1), 3, 0, false, true},
		{"a vote swapped for one in doubt", 12345 + h(1, 1) + h(4, 4), 3, 1, false, true},
		{"more in doubt than known", 12345 + h(1, 1) + h(2, 2) + h(3, 3), 4, 1, false, false},
		{"more in doubt than known, none committed", 12345 + h(1, 1) + h(2, 2), 4, 0, true, true},
		{"a count beyond the doubt", 12345 + h(1, 1) + h(2, 2), 3, 4, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, tried, known := id.explains(tc.after, tc.unknown, tc.k, nil)
			if ok != tc.ok || tried != tc.tried || known != 3 {
				t.Errorf("explains: %v, %v, %d; want %v, %v, 3", ok, tried, known, tc.ok, tc.tried)
			}
		})
	}
}
