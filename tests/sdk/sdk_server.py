"""The cua-s1-server process the SDK tests (sdk_test.py) talk to, over plain HTTP or over TLS
with a self-signed certificate made at test time, and the raw JSON requests whose answers the
SDK's answers are compared with.
"""

import datetime
import ipaddress
import json
import os
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


class Certificate:
    """A self-signed certificate for localhost and 127.0.0.1 and its key, as PEM files in a
    temporary directory, and a client SSL context that trusts it (and nothing else)."""

    def __init__(self):
        self._directory = tempfile.TemporaryDirectory()
        self.cert_path = os.path.join(self._directory.name, "cert.pem")
        self.key_path = os.path.join(self._directory.name, "key.pem")
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
        now = datetime.datetime.now(datetime.timezone.utc)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(key.public_key()), critical=False
            )
            .sign(key, hashes.SHA256())
        )
        with open(self.cert_path, "wb") as file:
            file.write(certificate.public_bytes(serialization.Encoding.PEM))
        with open(self.key_path, "wb") as file:
            file.write(
                key.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption(),
                )
            )

    def client_context(self):
        return ssl.create_default_context(cafile=self.cert_path)

    def remove(self):
        self._directory.cleanup()


class Server:
    """The server process on a free loopback port, over TLS when given a `Certificate`; its
    JSON-lines log goes to a temporary file."""

    def __init__(self, binary, *arguments, certificate=None):
        tls = [] if certificate is None else ["--tls-cert", certificate.cert_path, "--tls-key", certificate.key_path]
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [binary, "--threads", "1", *arguments, *tls, "--host", "127.0.0.1", "--port", "0"],
            stdout=subprocess.DEVNULL,
            stderr=self.log,
        )
        self.port = self._wait_for_event("listening")["port"]
        self._wait_for_event("ready")
        self.client_context = None if certificate is None else certificate.client_context()
        scheme = "http" if certificate is None else "https"
        self.base_url = f"{scheme}://127.0.0.1:{self.port}"

    def _wait_for_event(self, event, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.log.seek(0)
            for line in self.log.read().decode().splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if entry.get("event") == event:
                    return entry
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        self.log.seek(0)
        raise RuntimeError(f"no '{event}' from the server:\n{self.log.read().decode()}")

    def post_raw(self, body, key):
        """The server's answer to `body` sent as plain JSON (not by the SDK): (status, parsed body)."""
        request = urllib.request.Request(
            self.base_url + "/v1/systemone",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Authorization": "Bearer " + key},
        )
        try:
            with urllib.request.urlopen(request, timeout=60, context=self.client_context) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def open_connection(self):
        """A connection of its own (a TLS one over TLS) that the server has answered once."""
        connection = socket.create_connection(("127.0.0.1", self.port))
        if self.client_context is not None:
            connection = self.client_context.wrap_socket(connection, server_hostname="127.0.0.1")
        connection.sendall(b"GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answer = connection.recv(4096)
        if b" 200 " not in answer:
            connection.close()
            raise RuntimeError(f"GET /health/live answered {answer!r}")
        return connection

    def stop(self):
        self.process.kill()
        self.process.wait()
        self.log.close()
