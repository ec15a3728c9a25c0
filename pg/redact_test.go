package pg

import (
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestRedact(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string   // exact output, when it is fully determined
		secrets []string // must not appear in the output
		keep    []string // must still appear in the output
	}{
		{
			name:    "url user and password",
			in:      "postgres://alice:s3cretPW@db.example.com:5432/shop?sslmode=require",
			want:    "postgres://alice:xxxxx@db.example.com:5432/shop?sslmode=require",
			secrets: []string{"s3cretPW"},
			keep:    []string{"alice", "db.example.com:5432", "/shop", "sslmode=require"},
		},
		{
			name:    "postgresql scheme",
			in:      "postgresql://alice:s3cretPW@db.example.com/shop",
			want:    "postgresql://alice:xxxxx@db.example.com/shop",
			secrets: []string{"s3cretPW"},
		},
		{
			name:    "password in query",
			in:      "postgres://alice@db.example.com/shop?sslmode=disable&password=s3cretPW",
			secrets: []string{"s3cretPW"},
			keep:    []string{"postgres://alice@db.example.com/shop?", "sslmode=disable", "password=xxxxx"},
		},
		{
			name:    "password in userinfo and in query",
			in:      "postgres://alice:s3cretPW@db.example.com/shop?password=other2PW",
			want:    "postgres://alice:xxxxx@db.example.com/shop?password=xxxxx",
			secrets: []string{"s3cretPW", "other2PW"},
		},
		{
			name: "url without password",
			in:   "postgres://alice@db.example.com:5432/shop?sslmode=disable",
			want: "postgres://alice@db.example.com:5432/shop?sslmode=disable",
		},
		{
			name: "url without user",
			in:   "postgres://db.example.com/shop",
			want: "postgres://db.example.com/shop",
		},
		{
			name:    "url empty password",
			in:      "postgres://alice:@db.example.com/shop",
			want:    "postgres://alice:xxxxx@db.example.com/shop",
			secrets: nil,
		},
		{
			name:    "percent-encoded special characters in password",
			in:      "postgres://alice:p%40ss%2Fw%3Ard@db.example.com/shop",
			want:    "postgres://alice:xxxxx@db.example.com/shop",
			secrets: []string{"p@ss/w:rd", "p%40ss%2Fw%3Ard", "p%40ss", "p@ss"},
		},
		{
			name:    "percent-encoded password in query",
			in:      "postgres://alice@db.example.com/shop?password=p%40ss%26w%20rd",
			want:    "postgres://alice@db.example.com/shop?password=xxxxx",
			secrets: []string{"p@ss&w rd", "p%40ss%26w%20rd", "p%40ss"},
		},
		{
			name:    "multiple hosts",
			in:      "postgres://alice:s3cretPW@node1:26257,node2:26258/shop",
			want:    "postgres://alice:xxxxx@node1:26257,node2:26258/shop",
			secrets: []string{"s3cretPW"},
		},
		{
			name:    "unparseable url",
			in:      "postgres://alice:s3cretPW@db.example.com:notaport/shop",
			want:    "postgres://alice:xxxxx@db.example.com:notaport/shop",
			secrets: []string{"s3cretPW"},
		},
		{
			name:    "key=value",
			in:      "host=db.example.com password=s3cretPW user=alice dbname=shop",
			want:    "host=db.example.com password=xxxxx user=alice dbname=shop",
			secrets: []string{"s3cretPW"},
		},
		{
			name:    "key=value quoted password with space",
			in:      "host=db.example.com password='se cret' user=alice",
			want:    "host=db.example.com password=xxxxx user=alice",
			secrets: []string{"se cret", "cret"},
		},
		{
			name:    "key=value quoted password with escaped quote",
			in:      `host=db.example.com password='it\'s secret' user=alice`,
			want:    "host=db.example.com password=xxxxx user=alice",
			secrets: []string{"secret", `it\'s`},
		},
		{
			name:    "key=value upper case and spaces around =",
			in:      "host=db.example.com PASSWORD = s3cretPW user=alice",
			want:    "host=db.example.com PASSWORD = xxxxx user=alice",
			secrets: []string{"s3cretPW"},
		},
		{
			name:    "key=value password last",
			in:      "user=alice password=s3cretPW",
			want:    "user=alice password=xxxxx",
			secrets: []string{"s3cretPW"},
		},
		{
			name: "key=value without password",
			in:   "host=db.example.com user=alice dbname=shop",
			want: "host=db.example.com user=alice dbname=shop",
		},
		{name: "empty", in: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Redact(tt.in)
			if tt.want != "" || tt.in == "" {
				if got != tt.want {
					t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
				}
			}
			for _, s := range tt.secrets {
				if strings.Contains(got, s) {
					t.Errorf("Redact(%q) = %q: still contains secret %q", tt.in, got, s)
				}
			}
			for _, k := range tt.keep {
				if !strings.Contains(got, k) {
					t.Errorf("Redact(%q) = %q: lost %q", tt.in, got, k)
				}
			}
		})
	}
}

// TestRedactMatchesPgx checks that what Redact removes is what pgx would send
// as the password: for each URL pgx must see the password, and Redact must
// hide it.
func TestRedactMatchesPgx(t *testing.T) {
	tests := []struct {
		name, in, password string
		bug                string // non-empty: known failure, see the reason
	}{
		{name: "plain", in: "postgres://alice:s3cretPW@db.example.com/shop", password: "s3cretPW"},
		{name: "escaped", in: "postgres://alice:p%40ss%2Fw%3Ard@db.example.com/shop", password: "p@ss/w:rd"},
		{name: "query", in: "postgres://alice@db.example.com/shop?password=p%40ss", password: "p@ss"},
		{name: "key=value", in: "host=db.example.com user=alice password='se cret'", password: "se cret"},
		{
			// libpq and pgx take everything before the first '@' as the
			// userinfo; net/url stops the authority at '#' or '?' and, when
			// what precedes is a valid host:port, finds no password at all.
			name: "digits then # in password", in: "postgres://alice:2024#Summer@db.example.com/shop", password: "2024#Summer",
		},
		{
			name: "digits then ? in password", in: "postgres://alice:2024?Summer@db.example.com/shop", password: "2024?Summer",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := pgx.ParseConfig(tt.in)
			if err != nil {
				t.Fatalf("pgx.ParseConfig: %v", err)
			}
			if cfg.Password != tt.password {
				t.Fatalf("pgx sees password %q, the test expects %q", cfg.Password, tt.password)
			}
			if tt.bug != "" {
				t.Skipf("known bug: %s", tt.bug)
			}
			if got := Redact(tt.in); strings.Contains(got, tt.password) {
				t.Errorf("Redact(%q) = %q: leaks the password pgx uses", tt.in, got)
			}
			if got := passwords([]string{tt.in}); !slices.Contains(got, tt.password) {
				t.Errorf("passwords(%q) = %q, want it to contain %q", tt.in, got, tt.password)
			}
		})
	}
}

func TestPasswords(t *testing.T) {
	tests := []struct {
		name  string
		conns []string
		want  []string
	}{
		{name: "none", conns: []string{"postgres://alice@h/db", "host=h user=alice"}, want: nil},
		{name: "url userinfo", conns: []string{"postgres://alice:s3cretPW@h/db"}, want: []string{"s3cretPW"}},
		{name: "url escaped", conns: []string{"postgres://alice:p%40ss@h/db"}, want: []string{"p%40ss", "p@ss"}},
		{name: "url query", conns: []string{"postgres://alice@h/db?password=q%40pw"}, want: []string{"q%40pw", "q@pw"}},
		{name: "url both", conns: []string{"postgres://alice:one1@h/db?password=two2"}, want: []string{"one1", "two2"}},
		{name: "url empty password", conns: []string{"postgres://alice:@h/db"}, want: nil},
		{name: "key=value", conns: []string{"host=h password=s3cretPW user=alice"}, want: []string{"s3cretPW"}},
		{name: "key=value quoted", conns: []string{"host=h password='se cret' user=alice"}, want: []string{"se cret"}},
		{
			name:  "several conns",
			conns: []string{"postgres://a:first1@h1/db", "postgres://b@h2/db", "host=h3 password=third3"},
			want:  []string{"first1", "third3"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := passwords(tt.conns); !slices.Equal(got, tt.want) {
				t.Errorf("passwords(%q) = %q, want %q", tt.conns, got, tt.want)
			}
		})
	}
}

func TestScrub(t *testing.T) {
	tests := []struct {
		name    string
		msg     string
		secrets []string
		want    string
	}{
		{
			name:    "raw",
			msg:     `password authentication failed: got "s3cretPW"`,
			secrets: []string{"s3cretPW"},
			want:    `password authentication failed: got "xxxxx"`,
		},
		{
			name:    "every occurrence",
			msg:     "s3cretPW and s3cretPW",
			secrets: []string{"s3cretPW"},
			want:    "xxxxx and xxxxx",
		},
		{
			name:    "url-escaped form",
			msg:     "cannot use postgres://alice:p%40ss%2Fw@h/db (tried p@ss/w)",
			secrets: []string{"p@ss/w"},
			want:    "cannot use postgres://alice:xxxxx@h/db (tried xxxxx)",
		},
		{
			name:    "query-escaped space",
			msg:     "bad value se+cret for se cret",
			secrets: []string{"se cret"},
			want:    "bad value xxxxx for xxxxx",
		},
		{
			name:    "several secrets",
			msg:     "one1 two2 three3",
			secrets: []string{"one1", "three3"},
			want:    "xxxxx two2 xxxxx",
		},
		{name: "no secrets", msg: "nothing to hide", secrets: nil, want: "nothing to hide"},
		{name: "secret absent", msg: "nothing to hide", secrets: []string{"s3cretPW"}, want: "nothing to hide"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Scrub(tt.msg, tt.secrets)
			if got != tt.want {
				t.Errorf("Scrub(%q, %q) = %q, want %q", tt.msg, tt.secrets, got, tt.want)
			}
			for _, s := range tt.secrets {
				if strings.Contains(got, s) {
					t.Errorf("Scrub result %q still contains %q", got, s)
				}
			}
		})
	}
}

// TestScrubPasswordsOfURLs feeds the passwords found in URLs back to Scrub,
// the way Target does.
func TestScrubPasswordsOfURLs(t *testing.T) {
	conns := []string{"postgres://alice:p%40ss%21@h/db", "host=h password='se cret'"}
	msg := "failed with p@ss! (postgres://alice:p%40ss%21@h/db) and se cret"
	got := Scrub(msg, passwords(conns))
	for _, s := range []string{"p@ss!", "p%40ss%21", "se cret"} {
		if strings.Contains(got, s) {
			t.Errorf("Scrub = %q: still contains %q", got, s)
		}
	}
	if want := "failed with xxxxx (postgres://alice:xxxxx@h/db) and xxxxx"; got != want {
		t.Errorf("Scrub = %q, want %q", got, want)
	}
}

func TestRedactSecretsInEveryForm(t *testing.T) {
	for _, tc := range []struct{ in, secret string }{
		{"postgres://u@h/db?sslpassword=keyPW", "keyPW"},
		{"postgres://u@h/db?sslmode=require&sslpassword=keyPW&x=1", "keyPW"},
		{"host=h sslpassword=keyPW user=u", "keyPW"},
	} {
		if got := Redact(tc.in); strings.Contains(got, tc.secret) {
			t.Errorf("Redact(%q) = %q", tc.in, got)
		}
		if got := Scrub("failed: "+tc.in, passwords([]string{tc.in})); strings.Contains(got, tc.secret) {
			t.Errorf("Scrub leaves %q in %q", tc.secret, got)
		}
	}
	for _, msg := range []string{"postgres://u:se%20cret@h/db", "pw se+cret", "pw se cret", "pw p%2fss"} {
		got := Scrub(msg, passwords([]string{"postgres://u:se%20cret@h/db", "postgres://u:p%2Fss@h/db"}))
		if strings.Contains(got, "cret") || strings.Contains(got, "ss") && strings.Contains(got, "p%2") {
			t.Errorf("Scrub(%q) = %q", msg, got)
		}
	}
	if got := Scrub("abc", []string{""}); got != "abc" {
		t.Errorf("an empty secret garbles the message: %q", got)
	}
}

// TestRedactAmbiguous: an unescaped '#', '@', '/' or '?' in a password
// strands its tail after the userinfo; such a URL keeps nothing between ://
// and its last '@', while an '@' in a query value of a clean URL is data.
func TestRedactAmbiguous(t *testing.T) {
	tests := []struct {
		name, in, want string
		secrets        []string // must appear neither in Redact's output nor in a scrubbed message
	}{
		{
			name:    "# and @ and / in the password",
			in:      "postgres://alice:p#ss@ss/w0rd@localhost:5432/shop",
			want:    "postgres://xxxxx@localhost:5432/shop",
			secrets: []string{"p#ss@ss/w0rd", "ss/w0rd", "w0rd"},
		},
		{
			name:    "@ and / in the password",
			in:      "postgres://alice:p@ss/w0rd@localhost/shop",
			want:    "postgres://xxxxx@localhost/shop",
			secrets: []string{"p@ss/w0rd", "w0rd"},
		},
		{
			name:    "/ right after user:pass",
			in:      "postgres://alice:pass/word?x=y@localhost/shop",
			want:    "postgres://xxxxx@localhost/shop",
			secrets: []string{"pass/word", "word?x=y"},
		},
		{
			name:    "? then / in the password",
			in:      "postgres://alice:2024?Sum/mer@localhost/shop",
			want:    "postgres://xxxxx@localhost/shop",
			secrets: []string{"2024?Sum/mer", "Sum/mer"},
		},
		{
			name:    "# then / after a numeric port",
			in:      "postgres://alice:2024#Sum/mer@localhost/shop?sslmode=disable",
			want:    "postgres://xxxxx@localhost/shop?sslmode=disable",
			secrets: []string{"2024#Sum/mer", "Sum/mer"},
		},
		{
			name:    "ambiguous, with a query password too",
			in:      "postgres://alice:p@ss/w0rd@localhost/shop?password=other2PW",
			want:    "postgres://xxxxx@localhost/shop?password=xxxxx",
			secrets: []string{"w0rd", "other2PW"},
		},
		{
			name: "@ in a query value of a clean URL",
			in:   "postgres://alice:s3cretPW@db.example.com/shop?application_name=me@host",
			want: "postgres://alice:xxxxx@db.example.com/shop?application_name=me@host",
		},
		{
			name: "@ in a query value, no userinfo",
			in:   "postgres://db.example.com:5432/shop?application_name=me@host",
			want: "postgres://db.example.com:5432/shop?application_name=me@host",
		},
		{
			name: "ipv6 host and @ in a query value",
			in:   "postgres://alice:s3cretPW@[::1]:5432/shop?application_name=me@host",
			want: "postgres://alice:xxxxx@[::1]:5432/shop?application_name=me@host",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Redact(tt.in)
			if got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
			scrubbed := Scrub("cannot use "+tt.in, passwords([]string{tt.in}))
			for _, s := range tt.secrets {
				if strings.Contains(got, s) {
					t.Errorf("Redact(%q) = %q: still contains %q", tt.in, got, s)
				}
				if strings.Contains(scrubbed, s) {
					t.Errorf("Scrub leaves %q in %q", s, scrubbed)
				}
			}
			// Whatever pgx takes for the password is hidden too.
			if cfg, err := pgx.ParseConfig(tt.in); err == nil && cfg.Password != "" {
				// (A one-letter password is in "postgres" anyway.)
				if len(cfg.Password) > 3 && strings.Contains(got, cfg.Password) {
					t.Errorf("Redact(%q) = %q: leaks the password pgx reads, %q", tt.in, got, cfg.Password)
				}
				if !slices.Contains(passwords([]string{tt.in}), cfg.Password) {
					t.Errorf("passwords(%q) misses the password pgx reads, %q", tt.in, cfg.Password)
				}
			}
		})
	}
}
