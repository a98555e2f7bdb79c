import { causeChain } from "../util/cause-chain.js";
import { RenderError } from "./errors.js";
import { FETCH_BAD_PORT, isTransportError } from "./transport.js";

/** Codes of Node and undici, anywhere in a cause chain, that say the address itself is wrong. */
const setupCauses: Readonly<Record<string, string>> = {
  ECONNREFUSED: "connection refused",
  ENOTFOUND: "host not found (DNS)",
  EAI_AGAIN: "DNS lookup failed",
  EPROTO: "TLS handshake failed",
  CERT_HAS_EXPIRED: "TLS certificate expired",
  CERT_NOT_YET_VALID: "TLS certificate not yet valid",
  DEPTH_ZERO_SELF_SIGNED_CERT: "TLS certificate self-signed",
  SELF_SIGNED_CERT_IN_CHAIN: "TLS certificate chain self-signed",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "TLS certificate not verifiable",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "TLS certificate issuer unknown",
  ERR_TLS_CERT_ALTNAME_INVALID: "TLS certificate for another host",
};

/**
 * Why a failed send says the client is set up wrong (DESIGN §2, "Never worked, or worked before"):
 * connection refused, DNS, a TLS handshake error, a request an SDK refused to send, or 404
 * `not_found` on the one endpoint. Undefined
 * for any other failure.
 */
export function setupCause(error: RenderError): string | undefined {
  if (error.code === "not_found") return "404 not_found, no such endpoint";
  if (error.status !== undefined) return undefined;
  if (isTransportError(error.cause) && error.cause.failure === "refused") {
    return `refused before anything was sent (${error.cause.message})`;
  }
  for (const { code, message } of causeChain(error.cause)) {
    if (message === FETCH_BAD_PORT) return "a port fetch refuses to connect to (bad port)";
    if (typeof code !== "string") continue;
    const cause = setupCauses[code] ?? (code.startsWith("ERR_SSL_") ? "TLS handshake failed" : undefined);
    if (cause !== undefined) return `${cause} (${code})`;
  }
  return undefined;
}

/**
 * Tells a wrong setup from an outage, for one client. Before the service's first answer, a failure
 * with a setup cause becomes `setup_failed`, which halts the client; after it, failures stay as they
 * are and the breaker rides them out. Before its first document, an `unexpected_response` (a web
 * page where a PDF was expected) also becomes `setup_failed`: something else answers at the URL.
 */
export class SetupCheck {
  private answered = false;
  private documented = false;

  /**
   * `target` is where the request went, named in the error: the endpoint (which never holds the
   * key), or an SDK call, whose configuration is then what to check.
   */
  constructor(
    private readonly target: string,
    private readonly sdk = false,
  ) {}

  /** A document came back: the setup works. */
  noteDocument(): void {
    this.answered = true;
    this.documented = true;
  }

  /** The `setup_failed` error that `error` calls for, or undefined when it is a plain failure. */
  judge(error: RenderError): RenderError | undefined {
    if (error.code === "unexpected_response") {
      if (this.documented) return undefined;
      return this.setupFailed(
        error,
        `${error.message.startsWith(this.target) ? "" : `${this.target}: `}${error.message} It came before any document from the service: check ${this.sdk ? "the SDK's configuration and `toResponse`" : "the base URL"} (or the client's \`expect\`); the client is halted.`,
      );
    }
    if (this.answered) return undefined;
    const cause = setupCause(error);
    if (cause === undefined) {
      if (error.status !== undefined) this.answered = true;
      return undefined;
    }
    const check = this.sdk ? "Check the SDK's configuration (its base URL, its options)" : "Check the base URL";
    return this.setupFailed(error, `${this.target}: ${cause}, before any answer from the service. ${check}; the client is halted.`);
  }

  private setupFailed(error: RenderError, message: string): RenderError {
    return new RenderError(
      { code: "setup_failed", message, status: error.status, billed: error.billed, attempts: error.attempts },
      { cause: error },
    );
  }
}
