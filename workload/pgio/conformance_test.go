package pgio_test

import (
	"testing"

	"github.com/txload/txload/workload/pgio"
	"github.com/txload/txload/workload/workloadtest"
)

var srv *workloadtest.Server

func TestMain(m *testing.M) { workloadtest.Main(m, &srv) }

// pgio through every command (workloadtest.Run).
func TestConformance(t *testing.T) {
	workloadtest.Run(t, srv, pgio.Meta(), workloadtest.Config{Flags: []string{"--scale", "2000"}})
}
