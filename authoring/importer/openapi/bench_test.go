package openapi_test

import (
	"testing"

	"github.com/mcpd/mcpd/authoring/importer/openapi"
)

// BenchmarkConvert measures the conversion alone (the document is parsed
// once): the Petstore, and GitHub's whole REST API (about 1,200
// operations, 16 MB of HCL).
func BenchmarkConvert(b *testing.B) {
	for _, name := range []string{"petstore-3.1.yaml", "api.github.com.json.gz"} {
		doc := loadDoc(b, name)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := openapi.Convert(doc, openapi.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
