package config

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/suggest"
)

// Icon is one `icon { ... }` block of the server, a tool, a prompt, a
// resource or a resource template: what MCP 2025-11-25 calls an Icon
// (src, mimeType, sizes, theme), shown by hosts beside the item and put in
// the Server Card and server.json (the server's).
type Icon struct {
	// Src is an https: URL or a data: URI of base64 image data.
	Src      string    `hcl:"src"`
	SrcRange hcl.Range `hcl:"src,attr_value_range"`
	// MIMEType overrides the type the source gives (or lacks).
	MIMEType      string    `hcl:"mime_type,optional"`
	MIMETypeRange hcl.Range `hcl:"mime_type,attr_value_range"`
	// Sizes are "WxH" or "any" (a scalable image).
	Sizes      []string  `hcl:"sizes,optional"`
	SizesRange hcl.Range `hcl:"sizes,attr_value_range"`
	// Theme is "light" (for a light background) or "dark".
	Theme      string    `hcl:"theme,optional"`
	ThemeRange hcl.Range `hcl:"theme,attr_value_range"`
	DeclRange  hcl.Range `hcl:",def_range"`
}

// IconMIMETypes are the image types an icon may declare: those the MCP
// Registry accepts (its server.json schema), which include the two every
// client that shows icons must support (PNG and JPEG).
var IconMIMETypes = []string{"image/png", "image/jpeg", "image/jpg", "image/svg+xml", "image/webp"}

// MaxIconDataBytes bounds a data: icon: it is sent in every list that
// carries its item, to every client.
const MaxIconDataBytes = 64 << 10

// ReservedToolsetName is the toolset name that cannot be declared:
// /mcp/server-card is the Server Card of /mcp (SEP-2127 reserves
// <endpoint>/server-card), so no toolset can be served there.
const ReservedToolsetName = "server-card"

var (
	iconSize = regexp.MustCompile(`^([1-9][0-9]{0,4}x[1-9][0-9]{0,4}|any)$`)
	// registryName is the MCP Registry's (and the Server Card's) server
	// name: a reverse-DNS namespace, one slash, a name.
	registryName = regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`)
)

// RegistryName reports whether name is a valid Server Card / server.json
// name, such as "com.example/tickets" or "io.github.acme/tickets".
func RegistryName(name string) bool {
	return len(name) >= 3 && len(name) <= 200 && registryName.MatchString(name)
}

// checkDescribed checks what a file's blocks say about themselves to hosts
// and registries: the server block's identity, every icon, and the toolset
// name the Server Card route reserves.
func checkDescribed(fc *fileContent) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, s := range fc.Servers {
		diags = append(diags, checkServer(s)...)
	}
	for _, t := range fc.Tools {
		diags = append(diags, checkIcons(t.Icons)...)
	}
	for _, r := range fc.Resources {
		diags = append(diags, checkIcons(r.Icons)...)
	}
	for _, r := range fc.ResourceTemplates {
		diags = append(diags, checkIcons(r.Icons)...)
	}
	for _, p := range fc.Prompts {
		diags = append(diags, checkIcons(p.Icons)...)
	}
	for _, ts := range fc.Toolsets {
		if ts.Name == ReservedToolsetName {
			diags = append(diags, errAt(ts.NameRange, "Reserved toolset name",
				fmt.Sprintf("%q cannot name a toolset: /mcp/%s is the Server Card of /mcp (SEP-2127 reserves <endpoint>/server-card). Rename it, e.g. %q.",
					ts.Name, ts.Name, "server_card")))
		}
	}
	return diags
}

// checkServer checks the server block's identity against what the Server
// Card and the MCP Registry accept, so that `mcpd validate` says it rather
// than a registry later.
func checkServer(s *Server) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if strings.Contains(s.Name, "/") && !RegistryName(s.Name) {
		diags = append(diags, errAt(s.NameRange, "Invalid server name",
			fmt.Sprintf("%q has a slash, so it is read as a registry name, which is a reverse-DNS namespace, one slash and a name of letters, digits, . _ - (3 to 200 characters), such as \"com.example/tickets\" or \"io.github.acme/tickets\".", s.Name)))
	}
	if msg := versionProblem(s.Version); msg != "" {
		diags = append(diags, errAt(s.VersionRange, "Invalid server version", msg))
	}
	if n := utf8.RuneCountInString(s.Description); n > 100 {
		diags = append(diags, errAt(s.DescriptionRange, "Server description too long",
			fmt.Sprintf("description has %d characters; the Server Card and the MCP Registry take at most 100. Say what the server does in a sentence; longer guidance for models belongs in instructions.", n)))
	}
	if s.WebsiteURL != "" {
		if u, err := url.Parse(s.WebsiteURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			diags = append(diags, errAt(s.WebsiteURLRange, "Invalid website_url",
				fmt.Sprintf("website_url must be an absolute http(s) URL, such as \"https://example.com/tickets\"; %q is not.", s.WebsiteURL)))
		}
	}
	diags = append(diags, checkIcons(s.Icons)...)
	return diags
}

// versionProblem says what is wrong with a server version, or "": the
// registry rejects ranges, and a version is one line of text.
func versionProblem(v string) string {
	switch {
	case v == "":
		return ""
	case len(v) > 255:
		return "version is longer than 255 characters."
	case strings.ContainsAny(v, " \t\r\n"):
		return fmt.Sprintf("version %q has white space: give one version, such as \"1.2.0\".", v)
	case strings.ContainsAny(v[:1], "^~<>=") || strings.Contains(v, "*") || strings.HasSuffix(v, ".x") || v == "latest":
		return fmt.Sprintf("version %q is a range; the server's version is one version, such as \"1.2.0\" (semantic versioning recommended).", v)
	}
	return ""
}

// checkIcons checks icon blocks: the source's scheme and form, the MIME
// type, the sizes and the theme, each blamed at its value.
func checkIcons(icons []*Icon) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, ic := range icons {
		src := SubjectOr(ic.SrcRange, ic.DeclRange)
		dataType, problem := iconSourceProblem(ic.Src)
		if problem != "" {
			diags = append(diags, errAt(src, "Invalid icon src", problem))
		}
		if ic.MIMEType != "" {
			at := SubjectOr(ic.MIMETypeRange, ic.DeclRange)
			switch {
			case !contains(IconMIMETypes, ic.MIMEType):
				diags = append(diags, errAt(at, "Invalid icon mime_type",
					fmt.Sprintf("mime_type %q is not an icon type mcpd serves; use one of %s.%s", ic.MIMEType, strings.Join(IconMIMETypes, ", "), suggest.DidYouMean(ic.MIMEType, IconMIMETypes))))
			case dataType != "" && dataType != ic.MIMEType:
				diags = append(diags, errAt(at, "Conflicting icon mime_type",
					fmt.Sprintf("mime_type %q differs from the type %q of the data: URI in src; drop mime_type or make them agree.", ic.MIMEType, dataType)))
			}
		}
		for _, sz := range ic.Sizes {
			if !iconSize.MatchString(sz) {
				diags = append(diags, errAt(SubjectOr(ic.SizesRange, ic.DeclRange), "Invalid icon size",
					fmt.Sprintf("size %q is neither WIDTHxHEIGHT in pixels (such as \"48x48\") nor \"any\" (for a scalable image).", sz)))
			}
		}
		if ic.Theme != "" && ic.Theme != "light" && ic.Theme != "dark" {
			diags = append(diags, errAt(SubjectOr(ic.ThemeRange, ic.DeclRange), "Invalid icon theme",
				fmt.Sprintf("theme %q is neither \"light\" (an icon for a light background) nor \"dark\".%s", ic.Theme, suggest.DidYouMean(ic.Theme, []string{"light", "dark"}))))
		}
	}
	return diags
}

// iconSourceProblem checks an icon's src: an https: URL (clients fetch it:
// plain http would let anyone on the path swap it) or a data: URI of
// base64 image data. It returns the data URI's MIME type, if any.
func iconSourceProblem(src string) (dataType, problem string) {
	scheme, rest, ok := strings.Cut(src, ":")
	if !ok {
		return "", fmt.Sprintf("src %q is not a URI: give an https: URL or a data: URI, such as \"https://example.com/icon.png\".", src)
	}
	switch strings.ToLower(scheme) {
	case "https":
		u, err := url.Parse(src)
		switch {
		case err != nil:
			return "", fmt.Sprintf("src is not a valid URL: %v.", err)
		case u.Host == "":
			return "", fmt.Sprintf("src %q has no host.", src)
		case u.User != nil:
			return "", "src carries credentials (user:password@): every client that lists the item would see them; serve the icon without them."
		}
		return "", ""
	case "data":
		return dataIconProblem(rest)
	}
	return "", fmt.Sprintf("src must be an https: URL or a data: URI; %q is a %s: URI, which clients do not fetch or would fetch unprotected.", src, scheme)
}

// dataIconProblem checks the part of a data: URI after "data:".
func dataIconProblem(rest string) (string, string) {
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "the data: URI has no comma before its data (data:image/png;base64,...)."
	}
	mt, base64Enc := strings.CutSuffix(meta, ";base64")
	mt = strings.ToLower(mt)
	if !contains(IconMIMETypes, mt) {
		return "", fmt.Sprintf("the data: URI's type %q is not an icon type mcpd serves; use one of %s.", mt, strings.Join(IconMIMETypes, ", "))
	}
	if !base64Enc {
		return mt, "the data: URI is not base64 (data:" + mt + ";base64,...): build it with filebase64(), e.g. \"data:" + mt + ";base64,${filebase64(\"icon.png\")}\"."
	}
	if len(payload) > MaxIconDataBytes*4/3+4 {
		return mt, fmt.Sprintf("the icon's data is %d bytes of base64, over the %d KiB mcpd allows: it is sent in every list that carries the item; serve it from an https: URL instead.", len(payload), MaxIconDataBytes>>10)
	}
	if _, err := base64.StdEncoding.DecodeString(payload); err != nil {
		return mt, fmt.Sprintf("the data: URI's base64 does not decode: %v.", err)
	}
	return mt, ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func errAt(r hcl.Range, summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: r.Ptr()}
}
