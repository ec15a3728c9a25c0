package failoverrun

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/internal/runner"
)

// Every refusal is one line naming the flag, a usage error (exit 2), found
// before any server is touched: the options name a cluster no test starts.
func TestRefusals(t *testing.T) {
	const cluster = "postgres://u@127.0.0.1:1,127.0.0.1:2/db?target_session_attrs=read-write"
	for _, tc := range []struct {
		name string
		set  func(o *Options)
		want string
	}{
		{"at after duration", func(o *Options) { o.At = 5 * time.Second }, "--at 5s is not before the end of the load"},
		{"at equal to duration", func(o *Options) { o.At = 4 * time.Second }, "--at 4s is not before the end of the load"},
		{"promotion after duration", func(o *Options) { o.At, o.PromoteAfter = 3*time.Second, time.Second }, "--at 3s + --promote-after 1s is not before the end"},
		{"at zero", func(o *Options) { o.At = 0 }, "--at must be positive"},
		{"at negative", func(o *Options) { o.At = -time.Second }, "--at must be positive"},
		{"promote-after negative", func(o *Options) { o.PromoteAfter = -time.Second }, "--promote-after must be 0 or more"},
		{"probe interval zero", func(o *Options) { o.ProbeInterval = 0 }, "--probe-interval must be positive"},
		{"failover timeout zero", func(o *Options) { o.FailoverTimeout = 0 }, "--failover-timeout must be positive"},
		{"hold longer than at", func(o *Options) { o.HoldStandby = 3 * time.Second }, "--hold-standby 3s is longer than --at 2s"},
		{"transactions", func(o *Options) { o.Run.Engine.Duration, o.Run.Engine.Transactions = 0, 100 }, "not a number of --transactions"},
		{"replication unknown", func(o *Options) { o.Replications = []string{"semi"} }, `--replication: replication "semi": want async or sync`},
		{"replication twice", func(o *Options) { o.Replications = []string{"sync", "sync"} }, "--replication names sync twice"},
		{"fault unknown", func(o *Options) { o.Fault = "crash" }, `--fault: fault "crash"`},
		{"fast while held", func(o *Options) { o.Fault, o.HoldStandby = "fast", time.Second }, "--fault fast with --hold-standby"},
		{"command without url", func(o *Options) { o.FailoverCommand = "true" }, "--failover-command applies to --url"},
		{"single host", func(o *Options) { o.URL = "postgres://u@127.0.0.1:5432/db?target_session_attrs=read-write" }, "--url names one host (127.0.0.1:5432)"},
		{"single host keywords", func(o *Options) { o.URL = "host=127.0.0.1 port=5432 target_session_attrs=read-write" }, "--url names one host"},
		{"no session attrs", func(o *Options) { o.URL = "postgres://u@127.0.0.1:1,127.0.0.1:2/db" }, "--url lacks target_session_attrs=read-write"},
		{"replication with url", func(o *Options) { o.URL, o.ReplicationSet = cluster, true }, "--replication applies to the embedded pair"},
		{"fault with url", func(o *Options) { o.URL, o.FaultSet = cluster, true }, "--fault applies to the embedded pair"},
		{"hold with url", func(o *Options) { o.URL, o.HoldSet = cluster, true }, "--hold-standby applies to the embedded pair"},
		{"init keep embedded", func(o *Options) { o.Run.Init, o.Run.InitSet = "keep", true }, "--init applies to --url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := options(t, "bank")
			tc.set(&o)
			err := o.Validate()
			var ue *runner.UsageError
			if !errors.As(err, &ue) {
				t.Fatalf("got %v, want a usage error", err)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %q, want one line with %q", err, tc.want)
			}
		})
	}
	t.Run("accepted", func(t *testing.T) {
		for _, set := range []func(o *Options){
			func(*Options) {},
			func(o *Options) { o.URL = cluster },
			func(o *Options) { o.URL = "host=127.0.0.1,127.0.0.1 port=1,2 target_session_attrs=read-write" },
			func(o *Options) {
				o.Replications, o.Fault, o.HoldStandby = []string{"async", " sync"}, "kill", time.Second
			},
		} {
			o, _ := options(t, "bank")
			set(&o)
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
