// Package strictjson decodes a request body that must be exactly one JSON
// object of known fields. What encoding/json lets through is refused with
// an error naming the field: unknown keys, keys that match a field only when
// case is ignored, a key given twice (where "last one wins" hides a client
// bug, or lets two parsers read two different requests), wrong types and
// trailing data. Nested objects (a usage entry) are held to the same rules.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Error is why a body was refused.
type Error struct {
	Code    string // invalid_json, invalid_type, unknown_field or duplicate_field
	Field   string // the field at fault ("usage[2].account" inside a list); "" for the body as a whole
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func refuse(code, field, msg string) *Error { return &Error{Code: code, Field: field, Message: msg} }

// Decode decodes body, one JSON object in UTF-8, into v, a pointer to a
// struct whose fields carry json tags.
func Decode(body []byte, v any) *Error { return DecodeAs("request body", body, v) }

// DecodeAs is Decode for a document other than a request body: what names
// it in messages ("the receipt", "the trust root").
func DecodeAs(what string, body []byte, v any) *Error {
	if len(bytes.TrimSpace(body)) == 0 {
		return refuse("invalid_json", "", what+" must be a JSON object")
	}
	if !utf8.Valid(body) {
		return refuse("invalid_json", "", what+" must be UTF-8 JSON")
	}
	if bytes.TrimSpace(body)[0] != '{' {
		return refuse("invalid_json", "", what+" must be a JSON object")
	}
	if err := checkKeys(what, body, reflect.TypeOf(v).Elem(), ""); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var typeErr *json.UnmarshalTypeError
	switch err := dec.Decode(v); {
	case errors.As(err, &typeErr):
		return refuse("invalid_type", typeErr.Field, fmt.Sprintf("field %s must be %s, not a JSON %s", typeErr.Field, describe(typeErr.Type), typeErr.Value))
	case err != nil:
		return refuse("invalid_json", "", what+" is not valid JSON: "+err.Error())
	}
	if _, err := dec.Token(); err != io.EOF {
		return refuse("invalid_json", "", what+" must hold exactly one JSON object")
	}
	return nil
}

// checkKeys reads the object in raw against struct type t, and the objects
// nested in it against their field types. path names the object ("" at
// the top, "usage[2]." inside a list).
func checkKeys(what string, raw []byte, t reflect.Type, path string) *Error {
	known := fields(t)
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // the '{' the caller saw
		return refuse("invalid_json", "", what+" is not valid JSON")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return refuse("invalid_json", "", what+" is not valid JSON")
		}
		key, _ := tok.(string)
		field := clip(path + key)
		ft, ok := known[key]
		switch {
		case !ok:
			return refuse("unknown_field", field, fmt.Sprintf("unknown field %q (field names are case-sensitive)", field))
		case seen[key]:
			return refuse("duplicate_field", field, fmt.Sprintf("field %q appears twice", field))
		}
		seen[key] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return refuse("invalid_json", "", what+" is not valid JSON")
		}
		if err := checkNested(what, value, ft, field); err != nil {
			return err
		}
	}
	return nil
}

// checkNested checks the objects inside one field's value: a struct, or a
// list of them. Values of any other shape are left to the decoder.
func checkNested(what string, value json.RawMessage, t reflect.Type, field string) *Error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct && len(value) > 0 && value[0] == '{':
		return checkKeys(what, value, t, field+".")
	case t.Kind() == reflect.Slice && len(value) > 0 && value[0] == '[' && elemIsStruct(t):
		var items []json.RawMessage
		if err := json.Unmarshal(value, &items); err != nil {
			return refuse("invalid_json", "", what+" is not valid JSON")
		}
		for i, item := range items {
			if err := checkNested(what, item, t.Elem(), fmt.Sprintf("%s[%d]", field, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func elemIsStruct(t reflect.Type) bool {
	e := t.Elem()
	for e.Kind() == reflect.Pointer {
		e = e.Elem()
	}
	return e.Kind() == reflect.Struct
}

// fields maps the JSON names of t's fields to their types.
func fields(t reflect.Type) map[string]reflect.Type {
	known := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			known[name] = t.Field(i).Type
		}
	}
	return known
}

func describe(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return describe(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		one := describe(t.Elem())
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(one, "an "), "a ") + "s"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}

// clip cuts and mends a client's key before it goes back in a message.
func clip(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
