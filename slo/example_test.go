package slo_test

import (
	"fmt"

	"github.com/txload/txload/slo"
)

// A capacity search on a system that passes up to 3,170 ops/s.
func Example() {
	objective, err := slo.Parse("p99<=50ms, max<1s")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(objective)
	search, err := slo.NewSearch(100, 2, 0.02, 20)
	if err != nil {
		fmt.Println(err)
		return
	}
	for rate, ok := search.Next(); ok; rate, ok = search.Next() {
		search.Observe(rate, rate <= 3170) // a real step: run, then slo.Judge
	}
	r := search.Result()
	fmt.Printf("maximum %g ops/s, %g fails, after %d steps (%s)\n", r.Lo, r.Hi, r.Steps, r.Stop)
	// Output:
	// p99<=50ms,max<1s
	// maximum 3160 ops/s, 3200 fails, after 12 steps (converged)
}
