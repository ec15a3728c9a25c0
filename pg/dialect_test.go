package pg

import (
	"strings"
	"testing"

	"github.com/txload/txload/internal/pgtest"
)

func TestParseBanner(t *testing.T) {
	tests := []struct {
		name    string
		banner  string
		dialect Dialect
		version string
	}{
		{
			name:    "postgresql 18",
			banner:  "PostgreSQL 18.3 on x86_64-pc-linux-gnu, compiled by gcc (GCC) 14.2.1 20250110, 64-bit",
			dialect: PostgreSQL, version: "18.3",
		},
		{
			name:    "postgresql 15 debian",
			banner:  "PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14+deb12u1) 12.2.0, 64-bit",
			dialect: PostgreSQL, version: "15.18",
		},
		{
			name:    "postgresql 16 ubuntu",
			banner:  "PostgreSQL 16.4 (Ubuntu 16.4-1.pgdg22.04+1) on aarch64-unknown-linux-gnu, compiled by gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, 64-bit",
			dialect: PostgreSQL, version: "16.4",
		},
		{
			name:    "postgresql beta",
			banner:  "PostgreSQL 18beta1 on x86_64-pc-linux-gnu, compiled by gcc 14, 64-bit",
			dialect: PostgreSQL, version: "18beta1",
		},
		{
			name:    "cockroachdb",
			banner:  "CockroachDB CCL v24.1.0 (x86_64-pc-linux-gnu, built 2024/05/15 21:28:29, go1.22.2 X:nocoverageredesign)",
			dialect: CockroachDB, version: "v24.1.0",
		},
		{
			name:    "cockroachdb oss",
			banner:  "CockroachDB OSS v21.2.17 (x86_64-apple-darwin19, built 2022/10/24 17:17:28, go1.16.6)",
			dialect: CockroachDB, version: "v21.2.17",
		},
		{
			name:    "yugabytedb",
			banner:  "PostgreSQL 11.2-YB-2.20.1.0-b0 on x86_64-pc-linux-gnu, compiled by clang version 16.0.6 (https://github.com/yugabyte/llvm-project.git 1e6329f40e5c531c09ade7015278078682293ebd), 64-bit",
			dialect: YugabyteDB, version: "2.20.1.0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseBanner(tt.banner)
			if err != nil {
				t.Fatalf("ParseBanner(%q): %v", tt.banner, err)
			}
			want := Server{Dialect: tt.dialect, Version: tt.version, Banner: tt.banner}
			if got != want {
				t.Errorf("ParseBanner(%q) = %+v, want %+v", tt.banner, got, want)
			}
			if s, want := got.String(), string(tt.dialect)+" "+tt.version; s != want {
				t.Errorf("String() = %q, want %q", s, want)
			}
		})
	}
}

func TestParseBannerRejects(t *testing.T) {
	for _, banner := range []string{
		"",
		"garbage",
		"MySQL 8.0.36",
		"postgresql 18.3 on x86_64-pc-linux-gnu", // case matters: no server writes this
		"PostgreSQL on x86_64-pc-linux-gnu",
		"CockroachDB",
		"  PostgreSQL 18.3", // anchored at the start
		"EnterpriseDB 16.1.0 on x86_64-pc-linux-gnu",
	} {
		t.Run(banner, func(t *testing.T) {
			got, err := ParseBanner(banner)
			if err == nil {
				t.Fatalf("ParseBanner(%q) = %+v, want an error", banner, got)
			}
			if got != (Server{}) {
				t.Errorf("ParseBanner(%q) returned %+v with its error, want the zero Server", banner, got)
			}
			if !strings.Contains(err.Error(), "unrecognised server version") || !strings.Contains(err.Error(), "\""+banner+"\"") {
				t.Errorf("error %q does not quote the banner %q", err, banner)
			}
		})
	}
}

func TestDetect(t *testing.T) {
	ctx := testCtx(t)
	conn := pgtest.Conn(t, srv.NewDatabase(t))

	got, err := Detect(ctx, conn)
	if err != nil {
		t.Fatalf("Detect: %v", err)
	}
	var banner, serverVersion string
	if err := conn.QueryRow(ctx, "SELECT version(), current_setting('server_version')").Scan(&banner, &serverVersion); err != nil {
		t.Fatal(err)
	}
	if got.Dialect != PostgreSQL {
		t.Errorf("Dialect = %q, want %q (banner %q)", got.Dialect, PostgreSQL, banner)
	}
	if got.Banner != banner {
		t.Errorf("Banner = %q, want version() = %q", got.Banner, banner)
	}
	// server_version is "18.3", or "15.18 (Debian 15.18-0+deb12u1)" for
	// distribution builds: its first word is the version.
	if want := strings.Fields(serverVersion)[0]; got.Version != want {
		t.Errorf("Version = %q, want %q (server_version %q)", got.Version, want, serverVersion)
	}
	var major string
	if err := conn.QueryRow(ctx, "SELECT (current_setting('server_version_num')::int / 10000)::text").Scan(&major); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.Version, major) {
		t.Errorf("Version = %q does not start with major %s from server_version_num", got.Version, major)
	}
}

func TestDetectError(t *testing.T) {
	ctx := testCtx(t)
	conn := pgtest.Conn(t, srv.NewDatabase(t))
	if err := conn.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := Detect(ctx, conn)
	if err == nil {
		t.Fatalf("Detect on a closed connection = %+v, want an error", got)
	}
	if !strings.HasPrefix(err.Error(), "detecting server version: ") {
		t.Errorf("error %q lacks its context", err)
	}
}
