package mcp

import "mime"

// contentMediaType returns what mime.ParseMediaType returns as the media
// type of a Content-Type header value. The two values servers send on
// nearly every response are answered without parsing: ParseMediaType
// allocates a map of parameters for each.
func contentMediaType(contentType string) string {
	switch contentType {
	case "text/event-stream", "application/json":
		return contentType
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt
}
