// Package slo reads latency objectives such as "p99<=50ms,max<1s", checks
// them against HDR histograms, judges the steps of a capacity search, and
// runs that search: geometric growth until a step fails, then bisection.
//
// It is pure: no database, no clock, no I/O. The histograms it reads hold
// microseconds, as every txload histogram does (metrics.NewHistogram). The
// sweep command drives a Search with real runs; tests drive it with
// synthetic curves.
package slo
