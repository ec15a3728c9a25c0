package embedded

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a PostgreSQL release available as a zonky binary artifact.
type Version struct {
	Major string // "18"
	Full  string // "18.3.0", the Maven artifact version
}

// Versions lists the PostgreSQL versions a major version alone names, newest
// first. It mirrors github.com/fergusstrange/embedded-postgres v1.34.0 (12
// and up), except that 13.21.0 was never published to Maven Central, so 13
// is 13.22.0. Any other release published as binaries is started when asked
// for in full (Lookup("12.3.0")). Not every version exists for every
// platform (arm64 lacks 12-15 at these patch levels); Start then fails
// naming the missing URL.
func Versions() []Version {
	return []Version{
		{Major: "18", Full: "18.3.0"},
		{Major: "17", Full: "17.5.0"},
		{Major: "16", Full: "16.9.0"},
		{Major: "15", Full: "15.13.0"},
		{Major: "14", Full: "14.18.0"},
		{Major: "13", Full: "13.22.0"},
		{Major: "12", Full: "12.22.0"},
	}
}

// DefaultMajor is the major version started when none is asked for.
func DefaultMajor() string { return "18" }

// Lookup finds a version by major ("18", one of Versions) or by release,
// major.minor.patch ("18.3.0", "12.3.0"): a release need not be listed,
// only well formed; whether its binaries exist is known when Start fetches
// them.
func Lookup(version string) (Version, error) {
	want := strings.TrimSpace(version)
	var majors []string
	for _, v := range Versions() {
		if want == v.Major || want == v.Full {
			return v, nil
		}
		majors = append(majors, v.Major+" ("+v.Full+")")
	}
	if major, ok := release(want); ok {
		return Version{Major: major, Full: want}, nil
	}
	return Version{}, fmt.Errorf("unknown PostgreSQL version %q: give a major version, %s, or a release published as binaries, major.minor.patch such as 12.3.0",
		version, strings.Join(majors, ", "))
}

// release reports whether s is major.minor.patch, three numbers without
// signs or leading zeros (Maven's version of PostgreSQL 12.3 is 12.3.0;
// 9.6.24 for the 9.6 series), and returns its major number.
func release(s string) (string, bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return "", false
	}
	for _, p := range parts {
		if p == "" || len(p) > 4 || (len(p) > 1 && p[0] == '0') {
			return "", false
		}
		if _, err := strconv.ParseUint(p, 10, 16); err != nil {
			return "", false
		}
	}
	if parts[0] == "0" {
		return "", false
	}
	return parts[0], true
}
