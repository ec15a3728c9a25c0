package cli

import (
	"fmt"
	"net"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/txload/txload/internal/pgtest"
)

// passwordServer asks each connection for a clear-text password, keeps
// what it got, and refuses it. It returns its address and what it got.
func passwordServer(t *testing.T) (string, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var got []string
	addr := pgtest.Serve(t, func(nc net.Conn) {
		defer nc.Close()
		be := pgproto3.NewBackend(nc, nc)
		if _, err := be.ReceiveStartupMessage(); err != nil {
			return
		}
		be.Send(&pgproto3.AuthenticationCleartextPassword{})
		if be.Flush() != nil || be.SetAuthType(pgproto3.AuthTypeCleartextPassword) != nil {
			return
		}
		m, err := be.Receive()
		if pm, ok := m.(*pgproto3.PasswordMessage); ok && err == nil {
			mu.Lock()
			got = append(got, pm.Password)
			mu.Unlock()
		}
		be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "28P01", Message: "password authentication failed"})
		_ = be.Flush()
	})
	return addr, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// writePassfile writes a password file of mode, its one line for user at
// addr's host on any port (pgx looks the first node up, and the password
// goes to every node), and returns its path.
func writePassfile(t *testing.T, addr, user string, mode os.FileMode) string {
	t.Helper()
	host, _, _ := net.SplitHostPort(addr)
	pass := filepath.Join(t.TempDir(), "pgpass")
	if err := os.WriteFile(pass, []byte(fmt.Sprintf("%s:*:*:%s:s3cret-pw\n", host, user)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(pass, mode); err != nil {
		t.Fatal(err)
	}
	return pass
}

// A password file its group or others can read is ignored, with libpq's
// warning, as libpq ignores it; one only its owner can read is used: by
// every command that connects to a --url (lag's --source and --dest,
// failover's cluster). Before, pgx's reading of the file was taken as it
// was: the password of a file of mode 0644 was sent (by lag and failover
// until their targets took the environment).
func TestPassfileModes(t *testing.T) {
	t.Parallel()
	commands := []struct {
		name string
		args func(url, addr, other string) []string
	}{
		{"check", func(url, _, _ string) []string { return []string{"check", "bank", "--url", url} }},
		{"lag", func(url, _, _ string) []string {
			return []string{"lag", "--workload", "bank", "--source", url, "--dest", url, "-d", "1s"}
		}},
		{"failover", func(url, addr, other string) []string {
			// A cluster of two nodes: the first refuses, the second is not
			// reached.
			url = strings.Replace(url, addr, addr+","+other, 1) + "&target_session_attrs=read-write"
			return []string{"failover", "bank", "--url", url, "-d", "20s"}
		}},
	}
	for _, tc := range []struct {
		mode    os.FileMode
		sent    string
		warning bool
	}{
		{0o600, "s3cret-pw", false},
		{0o644, "", true},
		{0o640, "", true},
	} {
		for _, cmd := range commands {
			t.Run(fmt.Sprintf("%s/%04o", cmd.name, tc.mode), func(t *testing.T) {
				t.Parallel()
				addr, got := passwordServer(t)
				other, _ := passwordServer(t)
				pass := writePassfile(t, addr, "alice", tc.mode)
				url := fmt.Sprintf("postgres://alice@%s/shop?sslmode=disable&passfile=%s", addr, pass)
				r := txload(t.Context(), nil, cmd.args(url, addr, other)...)
				if r.code != ExitFailed {
					t.Fatalf("exit %d, want 1 (the server refuses every password)\n%s", r.code, r.stderr)
				}
				if sent := got(); len(sent) == 0 || sent[0] != tc.sent {
					t.Errorf("passwords sent %q, want %q", sent, tc.sent)
				}
				warning := fmt.Sprintf("WARNING: password file \"%s\" has group or world access; permissions should be u=rw (0600) or less\n", pass)
				if strings.Contains(r.stderr, warning) != tc.warning {
					t.Errorf("libpq's warning said: %v, want %v\n%s", !tc.warning, tc.warning, r.stderr)
				}
				if strings.Contains(r.stderr, "s3cret-pw") {
					t.Errorf("the password leaked:\n%s", r.stderr)
				}
			})
		}
	}
}

// The failover prober, which connects to each node itself, sends no
// password from a password file libpq would ignore: here the first node
// (the primary, trust) takes txload's clients, and the second asks the
// probe for a password. Before, the probe sent the password of a .pgpass
// of mode 0644 to that node.
func TestPassfileModesProber(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode os.FileMode
		sent bool
	}{
		{0o600, true},
		{0o644, false},
	} {
		t.Run(fmt.Sprintf("%04o", tc.mode), func(t *testing.T) {
			t.Parallel()
			primary := srv.NewDatabase(t)
			addr, got := passwordServer(t)
			pass := writePassfile(t, addr, "*", tc.mode)
			u, err := neturl.Parse(primary)
			if err != nil {
				t.Fatal(err)
			}
			u.Host += "," + addr
			q := u.Query()
			q.Set("passfile", pass)
			q.Set("target_session_attrs", "read-write")
			u.RawQuery = q.Encode()
			r := txload(t.Context(), nil, "failover", "bank", "--url", u.String(), "-d", "20s")
			if r.code == ExitOK {
				t.Fatalf("exit 0 with no standby\n%s", r.stderr)
			}
			sent := slices.Contains(got(), "s3cret-pw")
			if sent != tc.sent {
				t.Errorf("the probe sent the password file's password: %v, want %v (got %q)\n%s", sent, tc.sent, got(), r.stderr)
			}
			if strings.Contains(r.stderr, "s3cret-pw") {
				t.Errorf("the password leaked:\n%s", r.stderr)
			}
		})
	}
}
