// Package history records list-append histories and checks them for the
// isolation anomalies of Adya's definitions, as Elle does.
//
// A history is the sequence of transaction attempts a list-append workload
// ran: each attempt reads keys (every key holds a list of integers) and
// appends values to them, and commits, fails, or ends with an outcome
// unknown. The reads reveal the order in which the appends took effect,
// which is enough to build the dependency graph of the committed
// transactions (ww, wr and rw edges), find its cycles and name them:
// G0, G1c, G-single, G-nonadjacent, G2-item, beside the anomalies a single
// read shows (G1a, a garbage read of a value no attempt appended, G1b,
// internal inconsistency, an incompatible order, duplicate elements, a lost
// append). See Checker.
//
// Histories are written and read as JSON lines (one attempt per line, see
// WriteJSONL) and as Elle's EDN (WriteEDN), which elle-cli's list-append
// checker reads.
package history
