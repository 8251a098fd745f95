// Admission: a request slot first, its questions once the body is parsed; refusals reserve
// nothing; a ticket gives its capacity back exactly once (release, destruction, after a move).
#define BOOST_TEST_MODULE admission
#include <boost/test/unit_test.hpp>

#include <vector>

#include "actors/admission.hpp"

using namespace cua_s1;

BOOST_AUTO_TEST_CASE(requests_beyond_the_limit_are_refused_without_reserving) {
  admission gate({.max_requests = 2, .max_questions = 100});
  auto first = gate.try_admit();
  auto second = gate.try_admit();
  BOOST_TEST_REQUIRE(first.has_value());
  BOOST_TEST_REQUIRE(second.has_value());
  BOOST_TEST(gate.queued_requests() == 2u);
  BOOST_TEST(!gate.try_admit().has_value());
  BOOST_TEST(gate.queued_requests() == 2u);
  BOOST_TEST(gate.queued_questions() == 0u);

  first->release();
  BOOST_TEST(gate.queued_requests() == 1u);
  auto third = gate.try_admit();  // the released slot is free again
  BOOST_TEST(third.has_value());
  BOOST_TEST(gate.queued_requests() == 2u);
}

BOOST_AUTO_TEST_CASE(questions_beyond_the_limit_are_refused_without_reserving) {
  admission gate({.max_requests = 10, .max_questions = 8});
  auto first = gate.try_admit();
  auto second = gate.try_admit();
  BOOST_TEST_REQUIRE((first && second));
  BOOST_TEST(first->try_add_questions(5));
  BOOST_TEST(first->questions() == 5u);
  BOOST_TEST(gate.queued_questions() == 5u);

  BOOST_TEST(!second->try_add_questions(4));  // 5 + 4 > 8: nothing of the 4 is taken
  BOOST_TEST(second->questions() == 0u);
  BOOST_TEST(gate.queued_questions() == 5u);
  BOOST_TEST(gate.queued_requests() == 2u);  // the refused request still holds its slot

  BOOST_TEST(second->try_add_questions(3));  // exactly up to the limit
  BOOST_TEST(gate.queued_questions() == 8u);
  BOOST_TEST(!second->try_add_questions(1));
  BOOST_TEST(second->questions() == 3u);

  second->release();
  BOOST_TEST(gate.queued_requests() == 1u);
  BOOST_TEST(gate.queued_questions() == 5u);
  first->release();
  BOOST_TEST(gate.queued_requests() == 0u);
  BOOST_TEST(gate.queued_questions() == 0u);
}

BOOST_AUTO_TEST_CASE(a_ticket_gives_back_exactly_once) {
  admission gate({.max_requests = 4, .max_questions = 16});
  auto kept = gate.try_admit();
  BOOST_TEST_REQUIRE(kept.has_value());
  BOOST_TEST(kept->try_add_questions(2));
  {
    auto ticket = gate.try_admit();
    BOOST_TEST_REQUIRE(ticket.has_value());
    BOOST_TEST(ticket->try_add_questions(3));
    BOOST_TEST(gate.queued_requests() == 2u);
    BOOST_TEST(gate.queued_questions() == 5u);
    ticket->release();
    ticket->release();  // a second release gives nothing back
    BOOST_TEST(gate.queued_requests() == 1u);
    BOOST_TEST(gate.queued_questions() == 2u);
    BOOST_TEST(!ticket->try_add_questions(1));  // a released ticket reserves nothing
    BOOST_TEST(gate.queued_questions() == 2u);
  }  // destroying a released ticket gives nothing back either
  BOOST_TEST(gate.queued_requests() == 1u);
  BOOST_TEST(gate.queued_questions() == 2u);

  {
    auto dropped = gate.try_admit();
    BOOST_TEST_REQUIRE(dropped.has_value());
    BOOST_TEST(dropped->try_add_questions(4));
    BOOST_TEST(gate.queued_questions() == 6u);
  }  // destroyed without release: gives back once
  BOOST_TEST(gate.queued_requests() == 1u);
  BOOST_TEST(gate.queued_questions() == 2u);

  {
    std::vector<admission::ticket> moved;
    auto ticket = gate.try_admit();
    BOOST_TEST_REQUIRE(ticket.has_value());
    BOOST_TEST(ticket->try_add_questions(1));
    moved.push_back(std::move(*ticket));
    ticket.reset();  // the moved-from ticket holds nothing
    BOOST_TEST(gate.queued_requests() == 2u);
    BOOST_TEST(gate.queued_questions() == 3u);
    moved.front().release();
    BOOST_TEST(gate.queued_requests() == 1u);
    BOOST_TEST(gate.queued_questions() == 2u);
  }
  BOOST_TEST(gate.queued_requests() == 1u);
  BOOST_TEST(gate.queued_questions() == 2u);

  {
    auto source = gate.try_admit();
    auto target = gate.try_admit();
    BOOST_TEST_REQUIRE((source && target));
    BOOST_TEST(source->try_add_questions(1));
    BOOST_TEST(target->try_add_questions(2));
    BOOST_TEST(gate.queued_requests() == 3u);
    BOOST_TEST(gate.queued_questions() == 5u);
    *target = std::move(*source);  // the target's own reservation is given back first
    BOOST_TEST(gate.queued_requests() == 2u);
    BOOST_TEST(gate.queued_questions() == 3u);
    BOOST_TEST(target->questions() == 1u);
  }
  BOOST_TEST(gate.queued_requests() == 1u);
  BOOST_TEST(gate.queued_questions() == 2u);
  kept->release();
  BOOST_TEST(gate.queued_requests() == 0u);
  BOOST_TEST(gate.queued_questions() == 0u);
}
