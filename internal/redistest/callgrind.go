package redistest

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// CallgrindTotal reads the instruction count of a callgrind dump (a
// redis-server run under valgrind --tool=callgrind, see StartServerUnder):
// the "totals:" line a complete dump ends with. ok is false while the dump
// is missing or not yet complete.
func CallgrindTotal(name string) (total int64, ok bool) {
	f, err := os.Open(name)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "totals: "); ok {
			n, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
