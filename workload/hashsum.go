package workload

import (
	"fmt"
	"math/big"
)

// HashSum reads a sum of 64-bit hashes the server added up as a numeric
// (the sum of bigints, as text: a run's identity of the rows it wrote),
// mod 2^64; what names the sum in the error.
func HashSum(s, what string) (uint64, error) {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return 0, fmt.Errorf("reading %s's identity sum %q", what, s)
	}
	return n.Mod(n, new(big.Int).Lsh(big.NewInt(1), 64)).Uint64(), nil
}
