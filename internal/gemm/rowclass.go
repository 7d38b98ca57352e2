package gemm

// RowClass names the summation order a product with m rows of A gets from
// the active kernel family: two products with the same B and k whose A have
// m1 and m2 rows give every row of C the same bits whenever
// RowClass(m1) == RowClass(m2), whatever B's layout or format (float32 or
// Lowp). Each output is a sum over k, and the families sum it in one of a
// few orders chosen by m (dot-product kernels summing along k in vector
// lanes, strided or packed kernels accumulating one FMA per k); products
// whose row counts fall in different classes may differ in the last bits.
//
// A decode step that drops finished rows from its batch keeps its results
// by moving only between row counts of one class.
func RowClass(m int) int {
	k := kernels.Load()
	switch {
	case k.dot == nil || m > dotMaxRows:
		// Packed GEMM for every B (the dot path needs a transposed B and
		// few rows; without dot kernels nothing else takes a product), or
		// the narrow path, which sums as the packed one does.
		return 2
	case k.strided != nil && m >= stridedFrom(k):
		// A transposed float32 B goes to the strided kernels, a transposed
		// Lowp B to the dot kernels, any other B to the packed GEMM: the
		// same choice for every m of the range.
		return 1
	}
	// A transposed B to the dot kernels, any other to the packed GEMM.
	return 0
}
