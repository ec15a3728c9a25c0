package vote_test

import (
	"testing"

	"github.com/txload/txload/workload/vote"
	"github.com/txload/txload/workload/workloadtest"
)

var srv *workloadtest.Server

func TestMain(m *testing.M) { workloadtest.Main(m, &srv) }

// vote through every command (workloadtest.Run).
func TestConformance(t *testing.T) {
	workloadtest.Run(t, srv, vote.Meta(), workloadtest.Config{Flags: []string{"--articles", "1000"}})
}
