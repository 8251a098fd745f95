// The System One request forms against the real server process: one screenshot request as a data
// URL, an inline asset and a multipart form (string and dict state, built as the SDK builds it),
// each plain, gzip and zstd, all answered with the same bytes; the WebSocket takes inline assets;
// a coding the server does not read is 415 on the headers.
#define BOOST_TEST_MODULE server_forms
#include <boost/test/unit_test.hpp>

#include <zlib.h>
#include <zstd.h>

#include <boost/beast/websocket.hpp>
#include <boost/json.hpp>

#include "server_process.hpp"
#include "test_support.hpp"

using namespace cua_s1;
using namespace cua_s1::test;

namespace {

namespace http = boost::beast::http;

server_process& server() {
  static server_process instance({"--threads", "2"});
  static const bool ready = instance.wait_ready();
  BOOST_TEST_REQUIRE(ready, instance.log());
  return instance;
}

const std::string reference = "<image:2ae4b9dc3f4b4a89bfa97f398d04d38e>";
const std::string boundary = "9f1c0e5b7a3d4c2e8b6a0f1d3c5e7a9b";

// The fixture request, and its image's base64.
struct screenshot_request {
  std::string json = read_file(fixture_path("prepare/requests/std-small.json"));
  boost::json::object parsed = boost::json::parse(json).as_object();
  std::string base64 = [this] {
    const std::string url(parsed.at("state").at("image").as_string());
    return url.substr(url.find(',') + 1);
  }();

  // The body the SDK serializes: state, model, questions, then assets.
  std::string with_assets(const boost::json::value& state, const boost::json::object& assets) const {
    boost::json::object body;
    body["state"] = state;
    body["model"] = parsed.at("model");
    body["questions"] = parsed.at("questions");
    body["assets"] = assets;
    return boost::json::serialize(body);
  }
};

const screenshot_request& screenshot() {
  static const screenshot_request instance;
  return instance;
}

struct request_form {
  std::string name;
  std::string content_type;
  std::string body;
};

// As the SDK's with_assets and encode_multipart write it: the JSON part `request`, then the image
// bytes as part asset-0, each with a filename and a Content-Type.
std::string sdk_multipart(const std::string& json, const std::string& image) {
  std::string body;
  auto add = [&](const std::string& name, const std::string& type, const std::string& content) {
    body += "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + name +
            "\"; filename=\"" + name + "\"\r\nContent-Type: " + type + "\r\n\r\n" + content + "\r\n";
  };
  add("request", "application/json", json);
  add("asset-0", "image/png", image);
  return body + "--" + boundary + "--\r\n";
}

std::vector<request_form> forms() {
  const auto& s = screenshot();
  const boost::json::object inline_entry{
      {"type", "image"}, {"format", "png"}, {"data_base64", s.base64}};
  const boost::json::object part_entry{{"type", "image"}, {"part", "asset-0"}};
  const std::string multipart_type = "multipart/form-data; boundary=" + boundary;
  const std::string image = base64_decode(s.base64);
  return {
      {"data URL", "application/json", s.json},
      {"inline asset", "application/json",
       s.with_assets(boost::json::string("shot"), {{"shot", inline_entry}})},
      {"multipart, string state", multipart_type,
       sdk_multipart(s.with_assets(boost::json::string(reference), {{reference, part_entry}}), image)},
      {"multipart, dict state", multipart_type,
       sdk_multipart(s.with_assets(boost::json::object{{"screen", reference}},
                                   {{reference, part_entry}}),
                     image)},
  };
}

std::string gzip(const std::string& text) {
  z_stream z{};
  BOOST_REQUIRE(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, text.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  BOOST_REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string zstd(const std::string& text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  const size_t size = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3);
  BOOST_REQUIRE(!ZSTD_isError(size));
  out.resize(size);
  return out;
}

http_reply post(const std::string& content_type, const std::string& encoding,
                const std::string& body) {
  std::vector<std::pair<std::string, std::string>> headers = {{"Content-Type", content_type}};
  if (!encoding.empty()) headers.emplace_back("Content-Encoding", encoding);
  return http_connection(server().port())
      .send(http::verb::post, "/v1/systemone", body, headers);
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_form_and_coding_gets_the_same_answer) {
  const http_reply expected = post("application/json", "", screenshot().json);
  BOOST_TEST_REQUIRE(expected.status == 200, expected.body);
  for (const auto& form : forms()) {
    for (const std::string coding : {"", "gzip", "zstd"}) {
      BOOST_TEST_CONTEXT(form.name << ", Content-Encoding " << (coding.empty() ? "none" : coding)) {
        const std::string body =
            coding == "gzip" ? gzip(form.body) : coding == "zstd" ? zstd(form.body) : form.body;
        const http_reply reply = post(form.content_type, coding, body);
        BOOST_TEST(reply.status == 200, reply.body);
        BOOST_TEST(reply.body == expected.body);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(the_websocket_takes_inline_assets) {
  const http_reply expected = post("application/json", "", screenshot().json);
  boost::asio::io_context io;
  boost::beast::websocket::stream<boost::asio::ip::tcp::socket> ws{io};
  ws.next_layer().connect({boost::asio::ip::make_address("127.0.0.1"), server().port()});
  ws.read_message_max(64 * 1024 * 1024);
  ws.handshake("127.0.0.1", "/v1/systemone/ws");
  ws.text(true);
  ws.write(boost::asio::buffer(forms()[1].body));
  boost::beast::flat_buffer buffer;
  ws.read(buffer);
  const auto reply = boost::json::parse(boost::beast::buffers_to_string(buffer.data())).as_object();
  BOOST_TEST(reply.at("status").as_int64() == 200);
  BOOST_TEST(boost::json::serialize(reply.at("body")) ==
             boost::json::serialize(boost::json::parse(expected.body)));
}

BOOST_AUTO_TEST_CASE(codings_the_server_does_not_read_are_415) {
  const std::string body = screenshot().json;
  for (const std::string coding : {"br", "deflate", "gzip, zstd", "zstd, identity"}) {
    BOOST_TEST_CONTEXT(coding) {
      const http_reply reply = post("application/json", coding, body);
      BOOST_TEST(reply.status == 415);
      BOOST_TEST(reply.body.find("Content-Encoding") != std::string::npos, reply.body);
    }
  }
  const http_reply stacked =
      http_connection(server().port())
          .send(http::verb::post, "/v1/systemone", gzip(gzip(body)),
                {{"Content-Encoding", "gzip"}});
  BOOST_TEST(stacked.status == 400, stacked.body);  // one coding read: the rest is not JSON
  BOOST_TEST(post("text/plain", "", body).status == 415);
}

BOOST_AUTO_TEST_CASE(decoded_size_and_stream_errors) {
  const std::string spaces(8 * 1024 * 1024 + 1, ' ');
  const http_reply bomb = post("application/json", "zstd", zstd(spaces));
  BOOST_TEST(bomb.status == 413, bomb.body);
  const http_reply gzip_bomb = post("application/json", "gzip", gzip(spaces));
  BOOST_TEST(gzip_bomb.status == 413, gzip_bomb.body);
  const std::string compressed = gzip(screenshot().json);
  const http_reply truncated =
      post("application/json", "gzip", compressed.substr(0, compressed.size() / 2));
  BOOST_TEST(truncated.status == 400, truncated.body);
  const http_reply no_boundary = post("multipart/form-data", "", forms()[2].body);
  BOOST_TEST(no_boundary.status == 400, no_boundary.body);
  const http_reply no_request_part = post(
      "multipart/form-data; boundary=" + boundary, "",
      "--" + boundary + "\r\nContent-Disposition: form-data; name=\"asset-0\"\r\n\r\nx\r\n--" +
          boundary + "--\r\n");
  BOOST_TEST(no_request_part.status == 422, no_request_part.body);
  // The server still answers on.
  BOOST_TEST(post("application/json", "", screenshot().json).status == 200);
}

BOOST_AUTO_TEST_CASE(an_unread_coding_is_refused_on_the_headers_before_the_body) {
  // With Expect: 100-continue the client sends no body until told: the 415 comes first.
  for (const std::string codings : {"Content-Encoding: br\r\n",
                                    "Content-Encoding: gzip\r\nContent-Encoding: zstd\r\n"}) {
    BOOST_TEST_CONTEXT(codings) {
      http_connection connection(server().port());
      const std::string head =
          "POST /v1/systemone HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
          "Content-Length: 1000\r\nExpect: 100-continue\r\n" + codings + "\r\n";
      boost::asio::write(connection.socket(), boost::asio::buffer(head));
      boost::beast::flat_buffer buffer;
      http::response<http::string_body> response;
      http::read(connection.socket(), buffer, response);
      BOOST_TEST(response.result_int() == 415u, response.body());
    }
  }
}
