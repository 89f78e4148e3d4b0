package strictjson_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/strictjson"
)

type entry struct {
	Account string `json:"account"`
	Units   string `json:"units"`
}

type request struct {
	Pool  *string  `json:"pool"`
	Usage []entry  `json:"usage"`
	Tags  []string `json:"tags"`
	Extra *entry   `json:"extra"`
}

func TestWhatEncodingJSONLetsThroughIsRefusedNamingTheField(t *testing.T) {
	for body, want := range map[string]strictjson.Error{
		`{"pool":"1","Pool":"2"}`:                     {Code: "unknown_field", Field: "Pool"},
		`{"pool":"1","pool":"2"}`:                     {Code: "duplicate_field", Field: "pool"},
		`{"usage":[{"account":"a"},{"ACCOUNT":"b"}]}`: {Code: "unknown_field", Field: "usage[1].ACCOUNT"},
		`{"usage":[{"account":"a","account":"b"}]}`:   {Code: "duplicate_field", Field: "usage[0].account"},
		`{"extra":{"units":"1","weight":2}}`:          {Code: "unknown_field", Field: "extra.weight"},
		`{"usage":[{"account":1}]}`:                   {Code: "invalid_type", Field: "usage.account"},
		`{"tags":"a"}`:                                {Code: "invalid_type", Field: "tags"},
		`{"pool":"1"} {"pool":"1"}`:                   {Code: "invalid_json"},
		`[{"pool":"1"}]`:                              {Code: "invalid_json"},
		"{\"pool\":\"\xff\"}":                         {Code: "invalid_json"},
		` `:                                           {Code: "invalid_json"},
		`{"pool":"1"`:                                 {Code: "invalid_json"},
	} {
		var req request
		err := strictjson.Decode([]byte(body), &req)
		require.NotNil(t, err, body)
		assert.Equal(t, want.Code, err.Code, body)
		assert.Equal(t, want.Field, err.Field, body)
		assert.NotEmpty(t, err.Message, body)
	}
}

func TestAStrictBodyDecodesAsEncodingJSONWould(t *testing.T) {
	var req request
	require.Nil(t, strictjson.Decode([]byte(` {"pool":"7","usage":[{"account":"a","units":"1"}],"tags":["x"],"extra":null} `+"\n"), &req))
	assert.Equal(t, "7", *req.Pool)
	assert.Equal(t, []entry{{"a", "1"}}, req.Usage)
	assert.Equal(t, []string{"x"}, req.Tags)
	assert.Nil(t, req.Extra)
}
