package pgio

import (
	"strings"
	"testing"
)

func TestParseScale(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string
	}{
		{"2000", 2000, ""},
		{"1", 1, ""},
		{"8G", 1 << 20, ""},
		{"512M", 65536, ""},
		{"1T", 1 << 27, ""},
		{"64K", 8, ""},
		{"8g", 1 << 20, ""},
		{"1X", 0, "give a number of 8 KiB blocks"},
		{"", 0, "give a number of 8 KiB blocks"},
		{"G", 0, "give a number of 8 KiB blocks"},
		{"1.5G", 0, "give a number of 8 KiB blocks"},
		{"0", 0, "must be at least 1 block"},
		{"0M", 0, "must be at least 1 block"},
		{"-5", 0, "must be positive"},
		{"-1G", 0, "must be positive"},
		{"+5", 0, "give a number"},
		{"12K", 0, "not a whole number of 8 KiB blocks"},
		{"99999999999999999999", 0, "too large"},
		{"9999999999999T", 0, "too large"},
		{"8388608T", 0, "too large"},
		{"1099511627777", 0, "too large"},
		{"8192T", 1 << 40, ""},
	} {
		got, err := ParseScale(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseScale(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseScale(%q) = %d, %v; want an error with %q", tc.in, got, err, tc.err)
		case err != nil && !strings.HasPrefix(err.Error(), "--scale "):
			t.Errorf("ParseScale(%q): %v does not name the flag", tc.in, err)
		}
	}
}

func FuzzParseScale(f *testing.F) {
	for _, s := range []string{"2000", "8G", "1X", "12K", "-1", "99999999999999999999T"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseScale(s)
		if err == nil && (n < 1 || n > MaxScale) {
			t.Fatalf("ParseScale(%q) = %d", s, n)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("ParseScale(%q): a multi-line error %q", s, err)
		}
	})
}

func TestSettingsRoundTrip(t *testing.T) {
	c := Config{Tables: 3, Scale: 123456}
	tables, scale, err := ParseSettings(c.Settings())
	if err != nil || tables != 3 || scale != 123456 {
		t.Fatalf("ParseSettings(%q) = %d, %d, %v", c.Settings(), tables, scale, err)
	}
}
