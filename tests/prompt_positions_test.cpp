// Chat rendering text and M-RoPE positions against the contract's worked examples.
#define BOOST_TEST_MODULE prompt_positions
#include <boost/test/unit_test.hpp>

#include "prep/chat_prompt.hpp"
#include "prep/mrope_positions.hpp"

using namespace cua_s1;

BOOST_AUTO_TEST_CASE(contract_position_example) {
  // ids [7, 8, img x6, 9, 10], grid [1, 4, 6] (spec/contract.md section 8).
  auto p = compute_mrope_positions(2, 4, 6, 2, 2);
  BOOST_TEST((p.axes[0] == std::vector<int32_t>{0, 1, 2, 2, 2, 2, 2, 2, 5, 6}));
  BOOST_TEST((p.axes[1] == std::vector<int32_t>{0, 1, 2, 2, 2, 3, 3, 3, 5, 6}));
  BOOST_TEST((p.axes[2] == std::vector<int32_t>{0, 1, 2, 3, 4, 2, 3, 4, 5, 6}));
  BOOST_TEST(p.rope_delta == -3);
}

BOOST_AUTO_TEST_CASE(rope_delta_for_880_image_tokens) {
  // 880 tokens on a 22 x 40 merged grid: delta = 40 - 880 (spec/contract.md section 8: -840).
  auto p = compute_mrope_positions(15, 44, 80, 2, 30);
  BOOST_TEST(p.rope_delta == -840);
  BOOST_TEST(p.axes[0].size() == 15u + 880u + 30u);
}

BOOST_AUTO_TEST_CASE(rendered_prompt_matches_the_contract_layout) {
  choice_question q;
  q.goal = "Save the changed display name.";
  q.labels = {"Click Save", "Click Cancel"};
  q.keys = {"save", "cancel"};
  const std::string expected =
      std::string("<|im_start|>system\n") + system_prompt +
      "<|im_end|>\n<|im_start|>user\n<|vision_start|><|image_pad|><|image_pad|><|vision_end|>"
      "Goal: Save the changed display name.\n\nApp: Cua Driver\nTask family: closed-candidate "
      "decision\n\nThe current screenshot is attached.\n\nOptions:\nA. Decision \"Click Save\" -> "
      "select\nB. Decision \"Click Cancel\" -> select\n\nAnswer with a single letter."
      "<|im_end|>\n<|im_start|>assistant\n<think>\n";
  BOOST_TEST(render_prompt(q, 2) == expected);
  q.goal.clear();
  BOOST_TEST(user_text(q).rfind("App: Cua Driver\n", 0) == 0u);
}
