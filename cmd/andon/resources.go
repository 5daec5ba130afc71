package main

import (
	"context"
	"fmt"
	"strings"
)

const resourcesAbout = `List and read the resources an MCP server offers.

  andon resources list [--templates] [--json]  one per line: the URI, a tab,
                                              the name, a tab, the description
                                              (--templates: the URI templates)
  andon resources read [--json] [--max-size N] URI
                                              the text of each part of the
                                              resource; a binary part is a
                                              one-line note (--json shows the
                                              whole result, blobs base64)

Pagination is followed. The server is reached as 'andon call' reaches it
(--stdio or --url, --header, --protocol). A read larger than --max-size
bytes fails instead of filling memory; the read is still stopped on the
wire as any other interrupted request.

` + surfaceExitCodes

// runResources is "andon resources": list or read a server's resources.
func runResources(ctx context.Context, e *env, args []string) int {
	return runSubcommand(ctx, e, "resources", resourcesAbout, []subcommand{
		{"list", runResourcesList},
		{"read", runResourcesRead},
	}, args)
}

func runResourcesList(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "resources list", "andon resources list (--stdio COMMAND | --url URL) [--templates] [flags]", resourcesAbout)
	sf := addServerFlags(fs)
	templates := fs.Bool("templates", false, "list the resource templates (resources/templates/list) instead")
	asJSON := fs.Bool("json", false, "print the resources (or templates) as a JSON array")
	if code, ok := sf.parseNoArgs(fs, args); !ok {
		return code
	}
	ctx, sess, code, ok := sf.open(ctx, e, e.stderr)
	if !ok {
		return code
	}
	defer sess.close()

	if *templates {
		list, err := collect(sess.client.ResourceTemplates(ctx, nil))
		if err != nil {
			return sess.fail(ctx, e, "listing resource templates", err)
		}
		if *asJSON {
			return printResultJSON(e, "resource templates", list)
		}
		for _, rt := range list {
			fmt.Fprintf(e.stdout, "%s\t%s\t%s\n", printable(rt.URITemplate), printable(displayName(rt.Title, rt.Name)), printable(rt.Description))
		}
		return exitOK
	}
	list, err := collect(sess.client.ListResources(ctx, nil))
	if err != nil {
		return sess.fail(ctx, e, "listing resources", err)
	}
	if *asJSON {
		return printResultJSON(e, "resources", list)
	}
	for _, r := range list {
		fmt.Fprintf(e.stdout, "%s\t%s\t%s\n", printable(r.URI), printable(displayName(r.Title, r.Name)), printable(r.Description))
	}
	return exitOK
}

// displayName is the name to show a person: the title if there is one.
func displayName(title, name string) string {
	if title != "" {
		return title
	}
	return name
}

func runResourcesRead(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "resources read", "andon resources read (--stdio COMMAND | --url URL) [flags] URI", resourcesAbout)
	sf := addServerFlags(fs)
	asJSON := fs.Bool("json", false, "print the whole result (contents, blobs base64) as JSON")
	maxSize := fs.Int("max-size", 0, "fail (exit 3) when the contents exceed `N` bytes (text, and blobs decoded); 0 means no cap but the message size")
	pos, code, ok := sf.parse(fs, args)
	if !ok {
		return code
	}
	switch {
	case len(pos) == 0:
		return fs.usageError("missing URI")
	case len(pos) > 1:
		return fs.usageError("too many arguments: want one URI, got %d", len(pos))
	case *maxSize < 0:
		return fs.usageError("negative --max-size %d", *maxSize)
	}
	uri := pos[0]

	opts, logOut, done := requestProgress(e)
	sf.maxResourceSize = *maxSize
	ctx, sess, code, ok := sf.open(ctx, e, logOut)
	if !ok {
		return code
	}
	defer sess.close()

	res, err := sess.client.ReadResource(ctx, uri, opts)
	done()
	if err != nil {
		return sess.fail(ctx, e, "read "+uri, err)
	}
	if *asJSON {
		return printResultJSON(e, "resource", res)
	}
	var b strings.Builder
	for _, part := range res.Contents {
		if part.Blob != nil {
			fmt.Fprintf(&b, "[blob %s %s, %d bytes; see --json]\n", printable(part.URI), printable(part.MIMEType), len(part.Blob))
			continue
		}
		b.WriteString(part.Text)
		if !strings.HasSuffix(part.Text, "\n") {
			b.WriteByte('\n')
		}
	}
	fmt.Fprint(e.stdout, b.String())
	return exitOK
}
