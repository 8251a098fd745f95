// Example: the decision engine inside another Asio program, without the HTTP layer.
//   embed_engine REQUEST.json [TINY_MODEL_DIR]
// answers the request with the bundled tiny model and prints the status and the JSON answer.
// TINY_MODEL_DIR is a directory in the tiny model's layout (base/, multimodal/,
// weights.lock.json), e.g. <prefix>/share/cua-s1/tiny; without it the library looks for the
// bundled tiny model itself (README, "Embedding / installing").
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "actors/decision_engine.hpp"
#include "server/serving_model.hpp"

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: embed_engine REQUEST.json [TINY_MODEL_DIR]\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "embed_engine: cannot read %s\n", argv[1]);
    return 2;
  }
  std::stringstream body;
  body << in.rdbuf();

  // Default options: the bundled tiny model, on the GPU when this build and machine have one.
  cua_s1::server_options model_options;
  if (argc == 3) {
    const std::string tiny = argv[2];
    model_options.model_dir = tiny + "/base";
    model_options.adapter_dir = tiny + "/multimodal";
    model_options.lock_file = tiny + "/weights.lock.json";
  }
  auto model = cua_s1::load_serving_model(model_options);
  if (!model) {
    std::fprintf(stderr, "embed_engine: %s\n", model.error().detail.c_str());
    return 1;
  }
  boost::asio::io_context io;  // the host's own io_context
  cua_s1::engine_options options;
  options.identity = model->identity;
  cua_s1::decision_engine engine(io.get_executor(), model->preparer, std::move(model->model), options);

  int status = 0;
  boost::asio::co_spawn(io, [&]() -> boost::asio::awaitable<void> {
    cua_s1::decision_response answer =
        co_await engine.async_decide(body.str(), boost::asio::use_awaitable);
    status = answer.status;
    std::printf("%d %s\n", answer.status, answer.body.c_str());
  }, boost::asio::detached);
  io.run();
  return status == 200 ? 0 : 1;
}
