"""A remote ACP endpoint for bench_remote.py: WebSocket echo of text frames at /acp, and at
/sse?count=N&size=S an SSE stream of N events of S bytes of JSON-RPC each, as fast as the
socket takes them. Prints `{"port": N}`, serves until SIGTERM."""

from __future__ import annotations

import asyncio
import json
import signal

from aiohttp import WSMsgType, web


async def echo(request: web.Request) -> web.StreamResponse:
    if request.headers.get("Upgrade", "").lower() != "websocket":
        return await sse(request)
    ws = web.WebSocketResponse(max_msg_size=0, compress=False)
    await ws.prepare(request)
    async for msg in ws:
        if msg.type == WSMsgType.TEXT:
            await ws.send_str(msg.data)
    return ws


async def sse(request: web.Request) -> web.StreamResponse:
    count, size = int(request.query.get("count", "1")), int(request.query.get("size", "100"))
    text = "x" * max(0, size - 80)
    event = f'data: {{"jsonrpc":"2.0","method":"session/update","params":{{"t":"{text}"}}}}\n\n'.encode()
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for _ in range(count):
        await response.write(event)
    await response.write_eof()
    return response


async def main() -> None:
    app = web.Application()
    app.router.add_get("/{tail:.*}", echo)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(json.dumps({"port": port}), flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
