package apierror_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/lake-catalog/lake/internal/apierror"
)

func TestWrite(t *testing.T) {
	rec := httptest.NewRecorder()
	apierror.Write(rec, http.StatusConflict, "exists", `a "quoted" <message>`)
	var got struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusConflict || rec.Header().Get("Content-Type") != "application/json" ||
		got.Error.Code != "exists" || got.Error.Message != `a "quoted" <message>` {
		t.Fatalf("got %d %q %+v, want 409 application/json exists", rec.Code, rec.Header().Get("Content-Type"), got)
	}
}
