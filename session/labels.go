package session

import (
	"maps"
	"strings"
	"unicode/utf8"
)

// Label bounds. They keep a session's labels small enough to live in every
// summary a listing holds.
const (
	// MaxLabels is the most labels one session carries.
	MaxLabels = 64
	// MaxLabelKeyBytes bounds a label key.
	MaxLabelKeyBytes = 128
	// MaxLabelValueBytes bounds a label value.
	MaxLabelValueBytes = 1024
)

// ValidateLabel reports a label the domain refuses. A key is 1 to
// MaxLabelKeyBytes bytes of lower-case ASCII letters, digits, '.', '_',
// '-' and '/', starting with a letter or digit ("team", "git.remote",
// "example.com/ticket"). A value is valid UTF-8 of at most
// MaxLabelValueBytes bytes without control characters; it may be empty (a
// label used as a tag).
func ValidateLabel(key, value string) error {
	if err := ValidateLabelKey(key); err != nil {
		return err
	}
	if len(value) > MaxLabelValueBytes {
		return invalidf("label %q: value of %d bytes (at most %d)", key, len(value), MaxLabelValueBytes)
	}
	if !utf8.ValidString(value) || strings.ContainsFunc(value, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return invalidf("label %q: value is not valid UTF-8 without control characters", key)
	}
	return nil
}

// ValidateLabelKey reports a label key outside the documented alphabet or
// length (see ValidateLabel).
func ValidateLabelKey(key string) error {
	if len(key) > MaxLabelKeyBytes || !labelKeyChars(key) {
		return invalidf("label key %q: 1 to %d bytes of a-z, 0-9, '.', '_', '-', '/', starting with a letter or digit", key, MaxLabelKeyBytes)
	}
	return nil
}

func labelKeyChars(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-' || c == '/'):
		default:
			return false
		}
	}
	return true
}

func validateLabels(labels map[string]string) error {
	if len(labels) > MaxLabels {
		return invalidf("%d labels (at most %d)", len(labels), MaxLabels)
	}
	for k, v := range labels {
		if err := ValidateLabel(k, v); err != nil {
			return err
		}
	}
	return nil
}

// Labels returns a copy of the session's labels (nil when it has none).
func (s *Session) Labels() map[string]string {
	if len(s.labels) == 0 {
		return nil
	}
	return maps.Clone(s.labels)
}

// Label returns the value of the label key and whether it is set.
func (s *Session) Label(key string) (string, bool) {
	v, ok := s.labels[key]
	return v, ok
}

// SetLabel sets the label key to value. Labels are the holder's to change
// in any lifecycle state (a finished session can still be tagged). It
// refuses an invalid label (ValidateLabel) and a new key beyond MaxLabels,
// changing nothing.
func (s *Session) SetLabel(key, value string) error {
	if err := ValidateLabel(key, value); err != nil {
		return err
	}
	if _, ok := s.labels[key]; !ok && len(s.labels) >= MaxLabels {
		return invalidf("label %q: the session already has %d labels", key, MaxLabels)
	}
	if s.labels == nil {
		s.labels = make(map[string]string)
	}
	s.labels[key] = value
	return nil
}

// RemoveLabel removes the label key and reports whether it was set.
func (s *Session) RemoveLabel(key string) bool {
	if _, ok := s.labels[key]; !ok {
		return false
	}
	delete(s.labels, key)
	return true
}
