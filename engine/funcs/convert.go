package funcs

import (
	"fmt"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

func stdlibConvert(v cty.Value, t cty.Type) (cty.Value, error) {
	out, err := convert.Convert(v, t)
	if err != nil {
		return cty.NilVal, fmt.Errorf("cannot convert %s to %s", v.Type().FriendlyName(), t.FriendlyName())
	}
	return out, nil
}
