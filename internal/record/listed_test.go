package record

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzEachListed: the elements of a page's content read in place
// (eachListed) are those of the array that content makes in brackets
// (eachElement), and one fails where the other does.
func FuzzEachListed(f *testing.F) {
	for _, s := range []string{``, ` `, `1`, `1,2`, ` {"a":[1,2]} , "x" `, `1,`, `,1`, `1]`, `1],[2`, `[1`, `"a\"]"`, `{}`, `[],[]`, `1 2`, `}`, `tru e`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var in, wrapped [][]byte
		errIn := eachListed(b, func(e []byte) error { in = append(in, e); return nil })
		arr := append(append([]byte{'['}, b...), ']')
		errWrapped := eachElement(arr, func(e []byte) error { wrapped = append(wrapped, e); return nil })
		require.Equal(t, errWrapped == nil, errIn == nil, "%q: in place %v, in brackets %v", b, errIn, errWrapped)
		if errIn == nil {
			require.Equal(t, len(wrapped), len(in))
			for i := range in {
				require.Equal(t, string(wrapped[i]), string(in[i]))
			}
		}
	})
}
