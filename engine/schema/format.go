package schema

import (
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"time"

	"github.com/google/uuid"
)

// checkFormat checks the formats models are most often asked for. Unknown
// formats are annotations only, as the 2020-12 draft says.
func checkFormat(format, v string) error {
	switch format {
	case "date-time":
		_, err := time.Parse(time.RFC3339, v)
		return err
	case "date":
		_, err := time.Parse(time.DateOnly, v)
		return err
	case "time":
		if _, err := time.Parse("15:04:05Z07:00", v); err != nil {
			_, err2 := time.Parse(time.TimeOnly, v)
			return err2
		}
		return nil
	case "email":
		_, err := mail.ParseAddress(v)
		return err
	case "uri":
		u, err := url.Parse(v)
		if err == nil && u.Scheme == "" {
			err = fmt.Errorf("missing scheme")
		}
		return err
	case "uuid":
		_, err := uuid.Parse(v)
		return err
	case "ipv4":
		if ip := net.ParseIP(v); ip == nil || ip.To4() == nil {
			return fmt.Errorf("not an IPv4 address")
		}
	case "ipv6":
		if ip := net.ParseIP(v); ip == nil || ip.To4() != nil {
			return fmt.Errorf("not an IPv6 address")
		}
	}
	return nil
}

func formatName(f string) string {
	switch f {
	case "date-time":
		return "an RFC 3339 date-time such as 2026-01-02T15:04:05Z"
	case "date":
		return "a date such as 2026-01-02"
	case "time":
		return "a time such as 15:04:05"
	case "email":
		return "an email address"
	case "uri":
		return "an absolute URI"
	case "uuid":
		return "a UUID"
	}
	return "a valid " + f
}
