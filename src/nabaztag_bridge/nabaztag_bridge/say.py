"""nabaztag_say: make a rabbit speak from the command line (a client of the bridge's say service).

    nabaztag_say "Hello, I am a rabbit."
    nabaztag_say --engine espeak --language de "Guten Tag, ich bin ein Hase."
    nabaztag_say --service /nabaztag/say --serial 0019db000001 --choreography nod "Yes."

Exit 0 when the speech is queued, 1 when the bridge refused it (its message is printed), 2 for
a usage error or no answer.
"""

import argparse
import sys

import rclpy

from legacy_robot_common.middleware import check_dds_security
from legacy_robot_common.params import ParameterError
from legacy_robot_interfaces.srv import RabbitSay

from .tts import ENGINES


def build_parser():
    parser = argparse.ArgumentParser(prog='nabaztag_say', description=__doc__.split('\n')[0])
    parser.add_argument('text', help='what the rabbit says')
    parser.add_argument('--service', default='say', help="the bridge's say service (say)")
    parser.add_argument('--serial', default='', help='rabbit serial ("" = every rabbit)')
    parser.add_argument(
        '--engine',
        default='',
        choices=ENGINES,
        help="piper, espeak or auto (the bridge's default)",
    )
    parser.add_argument('--voice', default='', help="voice (the bridge's default)")
    parser.add_argument('--language', default='', help='language, e.g. en, de, fr')
    parser.add_argument('--rate', type=float, default=0.0, help='speed, 0.5-2 (1 = normal)')
    parser.add_argument('--ears', type=int, nargs=2, default=(-1, -1), metavar=('EAR0', 'EAR1'))
    parser.add_argument('--color', default='', help='LED colour while speaking, #rrggbb')
    parser.add_argument('--choreography', default='', help='nod, wiggle or blink')
    parser.add_argument('--timeout', type=float, default=130.0, help='s to wait for the answer')
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    request = RabbitSay.Request(
        serial=args.serial,
        text=args.text,
        engine=args.engine,
        voice=args.voice,
        language=args.language,
        rate=args.rate,
        ear0=args.ears[0],
        ear1=args.ears[1],
        color=args.color,
        choreography=args.choreography,
    )
    try:
        check_dds_security()  # rcl's own failure would blame the ROS arguments
    except ParameterError as exc:
        print(f'nabaztag_say: {exc}', file=sys.stderr)
        return 2
    rclpy.init()
    node = rclpy.create_node('nabaztag_say')
    try:
        client = node.create_client(RabbitSay, args.service)
        if not client.wait_for_service(timeout_sec=10.0):
            print(
                f'nabaztag_say: no service {args.service!r} (is the bridge running?)',
                file=sys.stderr,
            )
            return 2
        future = client.call_async(request)
        rclpy.spin_until_future_complete(node, future, timeout_sec=args.timeout)
        if not future.done():
            print(f'nabaztag_say: no answer within {args.timeout:.0f} s', file=sys.stderr)
            return 2
        reply = future.result()
        print(reply.message)
        for url in reply.audio_urls:
            print(url)
        return 0 if reply.success else 1
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    sys.exit(main())
