package embedded

import (
	"fmt"
	"strings"
)

// Version is a PostgreSQL release available as a zonky binary artifact.
type Version struct {
	Major string // "18"
	Full  string // "18.3.0", the Maven artifact version
}

// Versions lists the PostgreSQL versions that can be started, newest first.
// It mirrors github.com/fergusstrange/embedded-postgres v1.34.0 (12 and up),
// except that 13.21.0 was never published to Maven Central, so 13 is 13.22.0.
// Not every version exists for every platform (arm64 lacks 12-15 at these
// patch levels); Start then fails naming the missing URL.
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

// Lookup finds a version by major ("18") or full ("18.3.0") version.
func Lookup(major string) (Version, error) {
	want := strings.TrimSpace(major)
	var allowed []string
	for _, v := range Versions() {
		if want == v.Major || want == v.Full {
			return v, nil
		}
		allowed = append(allowed, v.Major+" ("+v.Full+")")
	}
	return Version{}, fmt.Errorf("unknown PostgreSQL version %q: allowed are %s", major, strings.Join(allowed, ", "))
}
