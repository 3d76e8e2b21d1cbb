package openapi

import (
	"context"

	"github.com/getkin/kin-openapi/openapi3"
)

// Load is LoadWith with no options.
func Load(ctx context.Context, location string) (*openapi3.T, error) {
	return LoadWith(ctx, location, LoadOptions{})
}
