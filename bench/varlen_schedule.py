"""The stop schedule of the varlen variant of `bench/run.sh grpostep`, the
same as bench/grpostep/varlen.go's: completion j of example e ends with EOS
after scheduled_length(e, j) tokens, 16 + floor(240 u^1.5) for u uniform in
[0, 1) from splitmix64(1000 e + j): between 16 and 255 tokens, median 101,
mean about 112. Plain Python (no torch)."""
import math

M64 = (1 << 64) - 1


def splitmix64(x):
    """Steele, Lea and Flood's mixing function (Java's SplittableRandom)."""
    z = (x + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def scheduled_length(e, j):
    u = (splitmix64(1000 * e + j) >> 11) / float(1 << 53)
    return 16 + int(240 * u * math.sqrt(u))


if __name__ == "__main__":
    print([scheduled_length(e, j) for e in range(3) for j in range(4)])
    xs = [scheduled_length(e, j) for e in range(2000) for j in range(8)]
    xs.sort()
    print(min(xs), xs[len(xs) // 2], sum(xs) / len(xs), max(xs))
