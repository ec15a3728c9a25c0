package append_test

import (
	"testing"

	appendwl "github.com/txload/txload/workload/append"
	"github.com/txload/txload/workload/workloadtest"
)

var srv *workloadtest.Server

func TestMain(m *testing.M) { workloadtest.Main(m, &srv) }

// append through every command (workloadtest.Run).
func TestConformance(t *testing.T) {
	workloadtest.Run(t, srv, appendwl.Meta(), workloadtest.Config{})
}
