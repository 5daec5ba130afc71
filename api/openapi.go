package api

import (
	_ "embed"
	"net/http"
)

// openAPI is the OpenAPI 3.1 document of the API, routes added by other
// files of the package included. A test checks that every route registered
// on the mux is in it.
//
//go:embed openapi.json
var openAPI []byte

// serveOpenAPI is GET /v1/openapi.json.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openAPI)
}
