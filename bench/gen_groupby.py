#!/usr/bin/python3
"""Writes the db-benchmark groupby table G1_<N>_1e2_0_0 as CSV to stdout or a path.

Usage: bench/gen_groupby.py N [out.csv]   (N such as 1e7; K = 100, no NAs, unsorted)
Columns as in duckdblabs/db-benchmark: id1,id2 'id001'..'id100', id3 'id0000000001'..,
id4,id5 1..K, id6 1..N/K, v1 1..5, v2 1..15, v3 in [0,100] rounded to 6 decimals.
"""
import random
import sys


def main():
    n = int(float(sys.argv[1]))
    out = open(sys.argv[2], "w") if len(sys.argv) > 2 else sys.stdout
    k = 100
    nk = max(n // k, 1)
    rnd = random.Random(108)
    out.write("id1,id2,id3,id4,id5,id6,v1,v2,v3\n")
    ri = rnd.randint
    lines = []
    for _ in range(n):
        v3 = round(rnd.uniform(0, 100), 6)
        lines.append("id%03d,id%03d,id%010d,%d,%d,%d,%d,%d,%s\n" % (
            ri(1, k), ri(1, k), ri(1, nk), ri(1, k), ri(1, k), ri(1, nk),
            ri(1, 5), ri(1, 15), repr(v3)))
        if len(lines) >= 100000:
            out.write("".join(lines))
            lines = []
    out.write("".join(lines))
    out.close()


if __name__ == "__main__":
    main()
