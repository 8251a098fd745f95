"""The official System One Python SDK (typesafe-sdk with its zstd extra, pinned in
requirements.txt) against the real cua-s1-server process on the bundled tiny model, over plain
HTTP and over TLS, retries off: sync and async clients; a screenshot as the SDK's `Image` (sent as
multipart; the state a string, an object or an alias in `assets`), as an inline asset and as a
data URL, each with and without zstd, every answer equal to the data URL request sent as raw
JSON; models.list(); a wrong key, a 422 and a 503 mapped to the SDK's errors with their detail
and retry delay. What went out is checked on the headers the SDK's transport sent.

Run by ctest (tests/CMakeLists.txt): sdk_test.py SERVER_BINARY FIXTURES_DIR.
"""

import asyncio
import base64
import json
import os
import re
import ssl
import sys
import unittest

import httpx2
import typesafe_sdk
from typesafe_sdk import (
    AsyncTypeSafeClient,
    Image,
    RetryPolicy,
    TypeSafeAuthenticationError,
    TypeSafeClient,
    TypeSafeInternalServerError,
    TypeSafeUnprocessableEntityError,
)
from typesafe_sdk._core.compression import COMPRESSORS
from typesafe_sdk._core.errors import parse_retry_after

from sdk_server import Certificate, Server

SERVER_BINARY = sys.argv[1] if len(sys.argv) > 1 else ""
FIXTURES = sys.argv[2] if len(sys.argv) > 2 else ""
API_KEY = "sdk-test-key"
MODEL = "cua-s1-4b-0.2"
NO_RETRIES = RetryPolicy(max_retries=0)
REQUESTS = ("std-small", "std-two-questions")


def request_body(name):
    with open(os.path.join(FIXTURES, "prepare", "requests", name + ".json")) as file:
        return json.load(file)


def without_nulls(value):
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    return value


# ---- one screenshot in the SDK's forms ----
# Each form turns a raw request with a data URL state into the arguments of client.system_one
# and names the content type the SDK sends them with.


def screenshot(body):
    """The image of a data URL state: (format as an asset names it, bytes)."""
    match = re.fullmatch(r"data:image/(png|jpeg);base64,(.*)", body["state"]["image"], re.DOTALL)
    return match[1], base64.b64decode(match[2])


def data_url_form(body):
    return {"state": body["state"]}, "application/json"


def image_state_form(body):
    return {"state": Image(screenshot(body)[1])}, "multipart/form-data"


def image_in_object_state_form(body):
    return {"state": {"screen": Image(screenshot(body)[1])}}, "multipart/form-data"


def image_named_in_assets_form(body):
    return {"state": "screen", "assets": {"screen": Image(screenshot(body)[1])}}, "multipart/form-data"


def inline_asset_form(body):
    image_format, data = screenshot(body)
    asset = {"type": "image", "format": image_format, "data_base64": base64.b64encode(data).decode()}
    return {"state": "screen", "extra_body": {"assets": {"screen": asset}}}, "application/json"


def sdk_arguments(body, form=data_url_form):
    """The raw request `body` in `form` as the arguments of client.system_one, and its content type."""
    arguments, content_type = form(body)
    return {**arguments, "questions": body["questions"], "model": body["model"]}, content_type


# ---- the SDK's transport, recording what went out ----


class RecordingTransport(httpx2.HTTPTransport):
    """The SDK client's HTTP transport, appending the headers of every request it sends to `sent`."""

    def __init__(self, sent, **options):
        super().__init__(**options)
        self.sent = sent

    def handle_request(self, request):
        self.sent.append(request.headers)
        return super().handle_request(request)


class AsyncRecordingTransport(httpx2.AsyncHTTPTransport):
    """RecordingTransport for the async client."""

    def __init__(self, sent, **options):
        super().__init__(**options)
        self.sent = sent

    async def handle_async_request(self, request):
        self.sent.append(request.headers)
        return await super().handle_async_request(request)


# ---- the cases ----


class SdkCases:
    """Every case but the 503, against one server started for the class; mixed into a TestCase
    over plain HTTP and one over TLS."""

    certificate = None  # a Certificate: the server speaks TLS
    server = None

    @classmethod
    def setUpClass(cls):
        cls.server = Server(SERVER_BINARY, "--api-key", API_KEY, certificate=cls.certificate)
        # One SSL context for every client of the class (loading trusted certificates is slow).
        cls.verify = cls.server.client_context or ssl.create_default_context()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def setUp(self):
        self.sent = []  # the headers of every request the SDK sent in this test

    def client(self, compression=False, key=API_KEY):
        transport = RecordingTransport(self.sent, verify=self.verify)
        return TypeSafeClient(
            api_key=key,
            base_url=self.server.base_url,
            compression=compression,
            retry=NO_RETRIES,
            transport=transport,
        )

    def async_client(self, compression=False, key=API_KEY):
        transport = AsyncRecordingTransport(self.sent, verify=self.verify)
        return AsyncTypeSafeClient(
            api_key=key,
            base_url=self.server.base_url,
            compression=compression,
            retry=NO_RETRIES,
            transport=transport,
        )

    def ask(self, arguments, compression, asynchronous):
        """client.system_one(**arguments) with a new sync or async client."""
        if not asynchronous:
            with self.client(compression) as client:
                return client.system_one(**arguments)

        async def ask_async():
            async with self.async_client(compression) as client:
                return await client.system_one(**arguments)

        return asyncio.run(ask_async())

    def raw_answer(self, body):
        status, raw = self.server.post_raw(body, API_KEY)
        self.assertEqual(status, 200, raw)
        return raw

    def assert_same_answer(self, result, raw):
        """The SDK's parsed answer holds exactly what the raw JSON answer holds."""
        self.assertEqual(result.model, raw["model"])
        self.assertEqual(set(result.answers), set(raw["answers"]))
        for name, answer in result.answers.items():
            self.assertEqual(without_nulls(answer.model_dump(mode="json")), raw["answers"][name], name)
        self.assertEqual(
            without_nulls(result.usage.model_dump(mode="json")), without_nulls(raw["usage"])
        )

    def assert_last_sent(self, content_type, encoding):
        headers = self.sent[-1]
        self.assertEqual(headers["content-type"].split(";")[0], content_type)
        self.assertEqual(headers.get("content-encoding"), encoding)

    def check_form(self, form):
        """`form` of each request, zstd and uncompressed, sync and async: the data URL's answer."""
        for name in REQUESTS:
            body = request_body(name)
            raw = self.raw_answer(body)
            for compression in (False, "zstd"):
                for asynchronous in (False, True):
                    with self.subTest(request=name, compression=compression, asynchronous=asynchronous):
                        arguments, content_type = sdk_arguments(body, form)
                        self.assert_same_answer(self.ask(arguments, compression, asynchronous), raw)
                        self.assert_last_sent(content_type, compression or None)

    def test_data_url_state_equals_raw_json(self):
        self.check_form(data_url_form)

    def test_image_state_goes_as_multipart_and_equals_the_data_url(self):
        self.check_form(image_state_form)

    def test_image_in_an_object_state_goes_as_multipart_and_equals_the_data_url(self):
        self.check_form(image_in_object_state_form)

    def test_image_named_in_assets_goes_as_multipart_and_equals_the_data_url(self):
        self.check_form(image_named_in_assets_form)

    def test_inline_asset_equals_the_data_url(self):
        self.check_form(inline_asset_form)

    def test_the_zstd_extra_is_installed_and_zstd_the_default(self):
        self.assertIn("zstd", COMPRESSORS)
        body = request_body("std-small")
        arguments, _ = sdk_arguments(body, image_state_form)
        self.assert_same_answer(self.ask(arguments, None, False), self.raw_answer(body))
        self.assert_last_sent("multipart/form-data", "zstd")

    def test_models_list(self):
        with self.client() as client:
            listed = client.models.list()
        names = [model.name for model in listed.models]
        self.assertEqual(names, [MODEL])
        self.assertRegex(listed.models[0].release_date, r"^\d{4}-\d{2}-\d{2}$")
        self.assertIn("bundled tiny model", listed.models[0].description)

        async def list_async():
            async with self.async_client() as client:
                return await client.models.list()

        self.assertEqual([model.name for model in asyncio.run(list_async()).models], [MODEL])

    def test_a_wrong_key_raises_the_authentication_error(self):
        body = request_body("std-small")
        arguments, _ = sdk_arguments(body)
        with self.client(key="not-the-key") as client:
            with self.assertRaises(TypeSafeAuthenticationError) as raised:
                client.system_one(**arguments)
        self.assertEqual(raised.exception.status, 401)
        self.assertEqual(raised.exception.body, {"detail": "invalid API key"})
        self.assertTrue(raised.exception.request_id)

        async def ask():
            async with self.async_client(key="not-the-key") as client:
                return await client.models.list()

        with self.assertRaises(TypeSafeAuthenticationError):
            asyncio.run(ask())

    def test_a_422_maps_to_the_unprocessable_error_with_its_detail(self):
        body = request_body("std-small")
        not_a_png = base64.b64encode(b"\x89PNG\r\n\x1a\n but not really").decode()
        body["state"] = {"image": "data:image/png;base64," + not_a_png}
        status, raw = self.server.post_raw(body, API_KEY)
        self.assertEqual(status, 422, raw)
        arguments, _ = sdk_arguments(body)
        with self.client() as client:
            with self.assertRaises(TypeSafeUnprocessableEntityError) as raised:
                client.system_one(**arguments)
        self.assertEqual(raised.exception.status, 422)
        self.assertEqual(raised.exception.body, raw)
        self.assertIn(raw["detail"], str(raised.exception))


class AtCapacityCases:
    """A 503 made deterministic: --max-connections 1 and that one connection held open."""

    certificate = None  # a Certificate: the server speaks TLS

    def test_a_503_maps_to_the_server_error_with_its_detail_and_retry_delay(self):
        server = Server(SERVER_BINARY, "--api-key", API_KEY, "--max-connections", "1",
                        certificate=self.certificate)
        try:
            held = server.open_connection()  # admitted: the only connection allowed
            try:
                body = request_body("std-small")
                arguments, _ = sdk_arguments(body)
                with TypeSafeClient(
                    api_key=API_KEY,
                    base_url=server.base_url,
                    compression=False,
                    retry=NO_RETRIES,
                    transport=httpx2.HTTPTransport(verify=server.client_context or True),
                ) as client:
                    with self.assertRaises(TypeSafeInternalServerError) as raised:
                        client.system_one(**arguments)
            finally:
                held.close()
            error = raised.exception
            self.assertEqual(error.status, 503)
            self.assertEqual(error.body, {"detail": "too many connections, retry later"})
            self.assertIn("too many connections", str(error))
            self.assertEqual(parse_retry_after(error.headers), 1000.0)
            self.assertEqual(error.headers.get("retry-after-ms"), "1000")
        finally:
            server.stop()


class WithCertificate:
    """Makes the class's servers speak TLS with a certificate of its own."""

    @classmethod
    def setUpClass(cls):
        cls.certificate = Certificate()
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.certificate.remove()


class SdkOverHttp(SdkCases, unittest.TestCase):
    pass


class SdkOverTls(WithCertificate, SdkCases, unittest.TestCase):
    pass


class SdkAtCapacityOverHttp(AtCapacityCases, unittest.TestCase):
    pass


class SdkAtCapacityOverTls(WithCertificate, AtCapacityCases, unittest.TestCase):
    pass


if __name__ == "__main__":
    print(f"typesafe-sdk {typesafe_sdk.__version__}, compressors {sorted(COMPRESSORS)}", flush=True)
    unittest.main(argv=sys.argv[:1], verbosity=2)
